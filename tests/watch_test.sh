#!/usr/bin/env bash
# `grade watch` in a real terminal: tmux runs it on a copy of the starter; the
# test saves the file as an editor would (written in place, then renamed over
# it), reads the screen after each save, and stops the watch with Ctrl-C.
# Then the manual fallback: --manual grades again on Enter.
#   tests/watch_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
command -v tmux >/dev/null || { echo "SKIPPED: tmux is not installed (Debian: tmux)"; exit 77; }
work=$(mktemp -d)
session=grade-watch-test-$$
# A private tmux server per phase (-L): a phase's new session never meets the
# last phase's server while that one is still shutting down ("server exited
# unexpectedly"), nor the user's own server.
socket=$session-1
tm() { tmux -L "$socket" "$@"; }
trap 'tm kill-server 2>/dev/null; rm -rf "$work"' EXIT
fail() {
  echo "FAILED: $*"
  echo "--- screen:"
  tm capture-pane -p -t "$session" 2>/dev/null | tail -25
  exit 1
}
file=$work/sdpa.cpp
cp "$root/exercises/exercise_sdpa/sdpa.cpp" "$file"
screen() { tm capture-pane -p -J -S -200 -t "$session"; }
# wait_for TEXT [SECONDS]: until the screen shows TEXT.
wait_for() {
  for _ in $(seq $((${2:-60} * 4))); do
    screen | grep -q -- "$1" && return 0
    sleep 0.25
  done
  return 1
}
start() {
  tm new-session -d -s "$session" -x 160 -y 50 \
    "GRADE_PROGRESS=$work/progress.json $(printf '%q ' "$build/grader/grade" --root "$root" --build-dir "$build" \
      watch exercise_sdpa --submission "$file" "$@"); echo WATCH-EXITED-\$?; sleep 30"
}

start
wait_for "grade 1," || fail "the watch did not start"
wait_for "Verdict: failed" || fail "the starter's report was not shown"
sleep 0.5  # the watch is waiting for the file now
# Saved in place (most editors), with the model solution.
cat "$root/solutions/exercise_sdpa/sdpa.cpp" >"$file"
wait_for "grade 2," || fail "saving the file did not start a grade"
wait_for "Verdict: passed" || fail "the solution's report was not shown"
# Saved by renaming a new file over the old (vim's and others' way), with a compile error.
sleep 0.5
printf 'this is not C++\n' >"$work/sdpa.cpp.new"
mv "$work/sdpa.cpp.new" "$file"
wait_for "grade 3," || fail "a save by rename did not start a grade"
wait_for "Verdict: compile_error" || fail "the compile error was not shown"
sleep 0.5
tm send-keys -t "$session" C-c
wait_for "WATCH-EXITED-" 10 || fail "Ctrl-C did not stop the watch"
screen | grep -q "watch stopped." || fail "the watch did not say it stopped"
[[ ! -e $work/progress.json ]] || fail "watching another file (--submission) recorded the learner's progress"
tm kill-server
socket=$session-2

# The fallback where file events are unavailable: Enter grades again.
start --manual
wait_for "press Enter to grade again" || fail "--manual did not start"
wait_for "Verdict: compile_error" || fail "--manual: no first report"
cat "$root/solutions/exercise_sdpa/sdpa.cpp" >"$file"
sleep 1
screen | grep -q "grade 2," && fail "--manual graded on a save"
tm send-keys -t "$session" Enter
wait_for "grade 2," || fail "--manual: Enter did not grade again"
wait_for "Verdict: passed" || fail "--manual: the second report was not shown"
tm send-keys -t "$session" C-c
wait_for "WATCH-EXITED-" 10 || fail "--manual: Ctrl-C did not stop the watch"
echo "PASSED: saves (in place and by rename) re-grade, compile errors survive, Ctrl-C stops, Enter in --manual"
