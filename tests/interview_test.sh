#!/usr/bin/env bash
# `grade interview` end to end. In a real terminal (tmux): the task and the
# clock, 'time', 'submit', the grade, follow-ups on the focus point the grade
# missed, answered on the keyboard, and the record. Then without a terminal:
# the deadline (an answers file that lets the clock run out), the readiness
# report, and the suggestion of what to practise next.
#   tests/interview_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
command -v tmux >/dev/null || { echo "SKIPPED: tmux is not installed (Debian: tmux)"; exit 77; }
work=$(mktemp -d)
session=grade-interview-test-$$
trap 'tmux kill-session -t "$session" 2>/dev/null; rm -rf "$work"' EXIT
# (Later the test puts a passing file in exercises/exercise_sdpa/ and restores it: run serially.)
export GRADE_PROGRESS=$work/progress.json
grade=("$build/grader/grade" --root "$root" --build-dir "$build")
fail() {
  echo "FAILED: $*"
  echo "--- screen:"
  tmux capture-pane -p -t "$session" 2>/dev/null | tail -30
  # What the pane printed, also where its session is gone (tmux pipe-pane).
  [[ -s $work/pane.log ]] && { echo "--- pane log (last 40 lines):"; tail -40 "$work/pane.log"; }
  exit 1
}
screen() { tmux capture-pane -p -J -S -400 -t "$session" 2>/dev/null; }
wait_for() {
  for _ in $(seq $((${2:-60} * 4))); do
    screen | grep -q -- "$1" && return 0
    sleep 0.25
  done
  return 1
}
json() { python3 -c "import json,sys; d=json.load(open('$GRADE_PROGRESS')); print($1)"; }
answer_until() {  # TEXT N: answer 'b' to each question, at most N times, until TEXT shows
  for _ in $(seq "$2"); do
    screen | grep -q "$1" && break
    tmux send-keys -t "$session" "b" Enter
    sleep 0.5
  done
}

# ---- in a terminal: a submission that forgets the 1/sqrt(d_k) scale ----
wrong=$work/mhsa.cpp
cp "$root/tests/submissions/exercise_mhsa/wrong/no_scaling.cpp" "$wrong"
tmux new-session -d -s "$session" -x 160 -y 50 \
  "GRADE_PROGRESS=$GRADE_PROGRESS $(printf '%q ' "${grade[@]}" interview exercise_mhsa --submission "$wrong" \
    --minutes 5); echo INTERVIEW-EXITED-\$?; sleep 60"
tmux pipe-pane -t "$session" -o "cat >>$(printf '%q' "$work/pane.log")"
wait_for "Type 'submit'" || fail "the interview did not start"
screen | grep -q "5:00" || fail "the time allowed was not shown"
screen | grep -q "Implement" || fail "the task was not shown"
tmux send-keys -t "$session" "time" Enter
wait_for "4:5[0-9] left" 10 || fail "'time' did not show the time left"
tmux send-keys -t "$session" "submit" Enter
wait_for "Follow-up 1 of" 120 || fail "no follow-up after the grade"
screen | grep -q "Verdict: failed" || fail "the grade's report was not shown"
screen | grep -q "Follow-up 1 of .*(Scale by sqrt(head_dim), not sqrt(dim), missed in your code)" ||
  fail "the first follow-up is not on the focus point the grade missed (scaling)"
# Answer every follow-up with 'b' (right or wrong, each is explained).
answer_until "Interview over" 10
wait_for "Interview over: failed" 10 || fail "the interview did not end"
wait_for "INTERVIEW-EXITED-1" 5 || fail "the exit status is not the grade's (1: failed)"
screen | grep -qE "Right\.|Not quite: the answer is" || fail "no answer was judged"
[[ $(json "len(d['interviews'])") == 1 ]] || fail "the interview was not recorded"
[[ $(json "'scaling' in d['interviews'][0]['missed']") == True ]] || fail "the record lacks the missed focus point"
[[ $(json "d['interviews'][0]['answers'][0]['focus_point']") == scaling ]] || fail "the record lacks the answers"
[[ $(json "all(a['answered'] for a in d['interviews'][0]['answers'])") == True ]] || fail "an answer was lost"
[[ $(json "'exercise_mhsa' in d.get('exercises', {})") == False ]] ||
  fail "an interview on another file (--submission) recorded the learner's grade"
tmux kill-session -t "$session"

# ---- the deadline, without a terminal: the clock runs out, then two answers ----
printf 'wait\nb\n8\n' >"$work/answers"
out=$("${grade[@]}" interview exercise_mhsa --submission "$wrong" --minutes 0.05 --answers "$work/answers")
grep -q "Time is up: grading what you have." <<<"$out" || fail "the deadline did not grade: $out"
grep -q "(time ran out)" <<<"$out" || fail "the summary does not say the time ran out"
grep -q "(no answer)" <<<"$out" || fail "follow-ups past the end of the answers are not marked unanswered"
[[ $(json "d['interviews'][1]['timed_out']") == True ]] || fail "the deadline was not recorded"
used=$(json "d['interviews'][1]['seconds_used']")
python3 -c "import sys; sys.exit(0 if 2.5 <= $used <= 3.01 else 1)" || fail "seconds used $used, expected about 3"

# ---- readiness across interviews (text and page), and what to practise next ----
report=$("${grade[@]}" interview --report)
grep -q "exercise_mhsa (2 interview(s))" <<<"$report" || fail "the report does not count the interviews: $report"
grep -qE "still weak +Scale by sqrt\(head_dim\)" <<<"$report" || fail "scaling is not reported still weak: $report"
grep -q "Next: exercise_mhsa" <<<"$report" || fail "the weakest exercise is not suggested next: $report"
"${grade[@]}" interview --report --format html >"$work/readiness.html" || fail "no readiness page"
python3 - "$work/readiness.html" <<'PY' || fail "the readiness page is not a safe, well-formed page"
import sys, xml.dom.minidom
text = open(sys.argv[1]).read()
doc = xml.dom.minidom.parseString(text.split("\n", 1)[1])  # after the doctype
assert "default-src 'none'" in text, "no content security policy"
assert not doc.getElementsByTagName("script"), "a script"
cells = [c.firstChild.data for c in doc.getElementsByTagName("td") if c.firstChild and c.firstChild.nodeType == c.TEXT_NODE]
assert "still weak" in cells, "scaling is not shown still weak"
assert any("time ran out" in c for c in cells), "the interview list lacks the timed-out interview"
PY
printf 'quit\n' >"$work/quit"
out=$("${grade[@]}" interview --answers "$work/quit")
grep -q "Suggested: exercise_mhsa (.*scaling" <<<"$out" || fail "no suggestion without an exercise: $out"
grep -q "nothing recorded" <<<"$out" || fail "quit did not stop the interview"
[[ $(json "len(d['interviews'])") == 2 ]] || fail "a quit interview was recorded"

# ---- from a blank page: a learner whose own file passes keeps it as it is ----
export GRADE_PROGRESS=$work/blank/progress.json
own=$root/exercises/exercise_sdpa/sdpa.cpp
cp "$own" "$work/own-saved.cpp"
trap 'cp "$work/own-saved.cpp" "$own"; tmux kill-session -t "$session" 2>/dev/null; rm -rf "$work"' EXIT
cp "$root/solutions/exercise_sdpa/sdpa.cpp" "$own"
cp "$own" "$work/own-before.cpp"
rm -f "$work/pane.log"
tmux new-session -d -s "$session" -x 160 -y 50 \
  "GRADE_PROGRESS=$GRADE_PROGRESS $(printf '%q ' "${grade[@]}" interview exercise_sdpa --minutes 5); echo INTERVIEW-EXITED-\$?; sleep 60"
tmux pipe-pane -t "$session" -o "cat >>$(printf '%q' "$work/pane.log")"
wait_for "Type 'submit'" || fail "the interview from a blank page did not start"
attempt=$(screen | sed -n 's/^Your file for this interview: //p' | head -1)
[[ -f $attempt ]] || fail "no file for the interview: '$attempt'"
# The blank starter: the starter's code, none of its steps.
# (Its "not implemented yet" messages name the file they are in: the
# interview's copy, the learner's own once kept.)
code_of() { grep -v '^[[:space:]]*//' "$1" | sed 's/ (edit [^)]*)//'; }
diff <(code_of "$attempt") <(code_of "$root/exercises/exercise_sdpa/.starter/sdpa.cpp") >/dev/null ||
  fail "the interview's file is not the starter's code"
grep -q '^[[:space:]]*// [0-9]\.' "$attempt" && fail "the interview's file shows the steps: $(cat "$attempt")"
# It names itself and how it is graded, not the learner's own file (issue 50).
grep -qF -- "--submission $attempt" "$attempt" || fail "the interview's file does not say how it is graded: $(head -5 "$attempt")"
grep -q "exercises/exercise_sdpa/sdpa.cpp\|Read README.md in this folder" "$attempt" &&
  fail "the interview's file points at the learner's own file: $(grep -n "exercises/\|README" "$attempt")"
screen | grep -q "## What the grader checks" && fail "the interview showed what the grader checks"
screen | grep -q "## The steps" && fail "the interview showed the steps"
screen | grep -q "## The task" || fail "the interview did not show the task"
cp "$root/solutions/exercise_sdpa/sdpa.cpp" "$attempt"  # what the learner writes in the interview
tmux send-keys -t "$session" "submit" Enter
wait_for "Follow-up 1 of" 120 || fail "no follow-up after the grade from a blank page"
screen | grep -q "Verdict: passed" || fail "the interview's own file did not pass"
answer_until "Keep this attempt" 12
wait_for "Keep this attempt" 10 || fail "the interview did not offer to keep the attempt"
tmux send-keys -t "$session" "n" Enter
wait_for "your own file is untouched" 10 || fail "declining to keep the attempt was not said"
wait_for "INTERVIEW-EXITED-0" 5 || fail "the exit status is not the grade's (0: passed)"
cmp -s "$own" "$work/own-before.cpp" || fail "an interview from a blank page changed the learner's own file"
[[ $(json "len(d['interviews'])") == 1 ]] ||
  fail "the interview from a blank page was not recorded"
tmux kill-session -t "$session"

# ---- keeping an attempt: the learner's file is saved to a backup, then replaced ----
{ echo submit; for _ in $(seq 12); do echo y; done; } >"$work/keep"
out=$("${grade[@]}" interview exercise_sdpa --minutes 5 --answers "$work/keep")
grep -q "Your attempt is now" <<<"$out" || fail "keeping the attempt was not done: $out"
diff <(code_of "$own") <(code_of "$root/exercises/exercise_sdpa/.starter/sdpa.cpp") >/dev/null &&
  ! grep -q '^[[:space:]]*// [0-9]\.' "$own" || fail "the kept attempt (the blank starter) is not the learner's file"
grep -q "interview's copy" "$own" && fail "the kept attempt still calls itself the interview's copy"
grep -q "Read README.md in this folder" "$own" || fail "the kept attempt lost the starter's opening line"
backup=$(ls "$work/blank/backups/exercise_sdpa/"sdpa.cpp.* 2>/dev/null | head -1)
[[ -n $backup ]] && cmp -s "$backup" "$work/own-before.cpp" || fail "the learner's file was not saved before it was replaced"
echo "interview: terminal flow, deadline, record, report, suggestion, blank page and keeping an attempt as expected"
