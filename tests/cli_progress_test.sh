#!/usr/bin/env bash
# The learner's loop from the command line, with a progress file of the
# test's own (GRADE_PROGRESS): `grade list` in learning order, a grade of the
# learner's file recorded as failing with what it missed (the untouched
# starter as not started), a grade of another
# file (--submission) not recorded, the solution gated until passed
# (--reveal opens it), a grade killed midway leaving the progress intact, and
# hints: least detail first, on the focus points the last grade missed.
#   tests/cli_progress_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
grade=("$build/grader/grade" --root "$root" --build-dir "$build")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GRADE_PROGRESS=$work/progress.json
fail() { echo "FAILED: $*"; exit 1; }

out=$("${grade[@]}" list) || fail "list: $out"
order=$(awk 'NR <= 3 {print $1 ":" $2 " " $3}' <<<"$out" | tr '\n' ' ')
[[ $order == "exercise_sdpa:not started exercise_mhsa:not started exercise_mha:not started " ]] ||
  fail "list before any grade: $out"

"${grade[@]}" exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" >/dev/null 2>&1
[[ ! -e $GRADE_PROGRESS ]] || fail "a grade of another file (--submission) changed the learner's progress"

# The learner's own file. The starter as given fails, but it is no attempt:
# the exercise stays "not started", with nothing missed.
"${grade[@]}" exercise_mhsa >/dev/null 2>&1
(($? == 1)) || fail "the starter did not fail"
out=$("${grade[@]}" list)
grep -q '^exercise_mhsa  *not started  *medium  *35 min  *Multi-head self-attention module$' <<<"$out" ||
  fail "list after a grade of the untouched starter: $out"
# Edited (the test runs alone, RUN_SERIAL, and puts the starter back): failing.
file=$root/exercises/exercise_mhsa/mhsa.cpp
cp -p "$file" "$work/starter"
trap 'cat "$work/starter" >"$file"; rm -rf "$work"' EXIT
printf '\n// my first attempt\n' >>"$file"
"${grade[@]}" exercise_mhsa >/dev/null 2>&1
(($? == 1)) || fail "the edited starter did not fail"
out=$("${grade[@]}" list)
grep -q '^exercise_mhsa  *failing  *medium  *35 min' <<<"$out" || fail "list after a failing grade: $out"

out=$("${grade[@]}" solution exercise_mhsa)
status=$?
((status == 1)) && grep -q -- "--reveal" <<<"$out" || fail "solution before passing (exit $status): $out"
grep -q "MultiHeadSelfAttentionImpl::forward" <<<"$out" && fail "solution shown before passing"
out=$("${grade[@]}" solution exercise_mhsa --reveal) || fail "solution --reveal: $out"
grep -q "solutions/exercise_mhsa/mhsa.cpp" <<<"$out" && grep -q "MultiHeadSelfAttentionImpl::forward" <<<"$out" ||
  fail "solution --reveal printed: ${out:0:300}"

# A grade killed midway (SIGKILL while it compiles or runs): the progress is what it was.
# Its scratch folder (which nothing can remove after a SIGKILL) goes with the test's
# folder, not into the machine's temporary folder.
chmod 711 "$work"  # the sandbox's user must pass through to the scratch folder
mkdir "$work/tmp" && chmod 1777 "$work/tmp"
cp "$GRADE_PROGRESS" "$work/before.json"
TMPDIR=$work/tmp "${grade[@]}" exercise_mhsa >/dev/null 2>&1 &
pid=$!
sleep 1
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$GRADE_PROGRESS" 2>/dev/null ||
  cmp -s "$GRADE_PROGRESS" "$work/before.json" || fail "the progress file is damaged after a killed grade"
out=$("${grade[@]}" list)
grep -q '^exercise_mhsa  *failing' <<<"$out" || fail "progress lost after a killed grade: $out"
# Hints: least detail first; after a failing grade, on what it missed (in the exercise's order).
out=$("${grade[@]}" hint exercise_sdpa) || fail "hint: $out"
grep -q "Hint 1 of 3 on 'matmul'" <<<"$out" || fail "the first hint of a fresh exercise: $out"
python3 - "$GRADE_PROGRESS" <<'PY'
import json, sys
path = sys.argv[1]
progress = json.load(open(path))
progress["exercises"]["exercise_mha"] = {"status": "failing", "missed": ["masking", "scaling"], "last_graded": "",
                                         "first_passed": "", "grades": 1, "hints_seen": {}}
progress["exercises"]["exercise_sdpa"].update({"status": "passed", "first_passed": "2026-11-22T00:00:00Z"})
json.dump(progress, open(path, "w"))
PY
seen=""
for _ in 1 2 3 4; do
  out=$("${grade[@]}" hint exercise_mha) || fail "hint: $out"
  seen+="$(grep -o "Hint [0-9] of [0-9] on '[a-z_]*'" <<<"$out");"
done
[[ $seen == "Hint 1 of 3 on 'scaling';Hint 2 of 3 on 'scaling';Hint 3 of 3 on 'scaling';Hint 1 of 3 on 'masking';" ]] ||
  fail "hints after a grade that missed masking and scaling: $seen"
grep -q "Your last grade missed: masking, scaling" <<<"$out" || fail "the hint does not say what was missed: $out"
out=$("${grade[@]}" hint exercise_mha --focus softmax) && grep -q "Hint 1 of 3 on 'softmax'" <<<"$out" ||
  fail "hint --focus softmax: $out"
# Every hint on a point seen: the last again, said so, with where hints are left (issue 50).
for _ in 1 2 3; do "${grade[@]}" hint exercise_mha --focus softmax >/dev/null; done
out=$("${grade[@]}" hint exercise_mha --focus softmax)
grep -q "You have seen every hint on 'softmax'; here is the last one again" <<<"$out" &&
  grep -q "Focus points with hints you have not seen: projections, head_split" <<<"$out" ||
  fail "a hint shown again was not said to be a repeat: $out"
"${grade[@]}" hint exercise_mha --focus nonsense >/dev/null 2>&1
(($? == 2)) || fail "hint --focus with an unknown focus point is not a usage error"
# Passed once: the solution opens without --reveal.
out=$("${grade[@]}" solution exercise_sdpa) || fail "solution after passing: $out"
grep -q "solutions/exercise_sdpa/sdpa.cpp" <<<"$out" || fail "solution after passing printed: ${out:0:200}"

echo "PASSED: list in learning order, progress recorded for the learner's own file only, hints by diagnosis, solution gated, a killed grade harmless"
