#!/usr/bin/env bash
# One student's input is that student's row: a class holding a student folder
# that is a link, one whose exercises/ folder links into the grader's model
# solutions, one whose file is a link out of the folder, one with two
# different answers, one with a near-miss name, a failing one and a hostile
# one is graded to a complete gradebook, and `grade class` and `grade merge`
# both exit 0 (their failure codes are for faults a re-run can fix).
#   tests/class_folder_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
grade=("$build/grader/grade" --root "$root" --build-dir "$build")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
class=$work/class
sol=$root/solutions/exercise_sdpa/sdpa.cpp
starter=$root/exercises/exercise_sdpa/sdpa.cpp
mkdir -p "$class"/{ann,bob,cat,dan,eve,fay,gus/src} "$work/elsewhere"
cp "$sol" "$class/ann/sdpa.cpp"                                  # correct
cp "$starter" "$class/bob/sdpa.cpp"                              # fails (the starter)
ln -s "$root/solutions" "$class/cat/exercises"                   # the model solution, through a link
cp "$sol" "$work/elsewhere/sdpa.cpp"
ln -s "$work/elsewhere/sdpa.cpp" "$class/dan/sdpa.cpp"           # a file outside the folder
mkdir -p "$class/eve/exercises/exercise_sdpa"
cp "$sol" "$class/eve/sdpa.cpp"                                  # two different answers
cp "$starter" "$class/eve/exercises/exercise_sdpa/sdpa.cpp"
cp "$sol" "$class/fay/SDPA (1).cpp"                              # a near-miss name
cp "$sol" "$class/gus/src/sdpa.cpp"
ln -s src/sdpa.cpp "$class/gus/sdpa.cpp"                         # a link that stays inside the folder
ln -s "$class/ann" "$class/hal"                                  # a student folder that is a link
mkdir -p -- "$class/-rf"
cp "$sol" "$class/-rf/sdpa.cpp"                                  # an id a spreadsheet reads as a formula
mkdir -p "$class/ivy"
cp "$root/tests/submissions/exercise_sdpa/hostile/aborts.cpp" "$class/ivy/sdpa.cpp"
long=$(printf 'n%.0s' $(seq 1 240))                               # an id near the 255-byte limit of a name
mkdir -p "$class/$long"
cp "$starter" "$class/$long/sdpa.cpp"

"${grade[@]}" class "$class" --exercise exercise_sdpa --results "$work/results" --jobs 2 >"$work/class.out" 2>&1
status=$?
cat "$work/class.out"
((status == 0)) || fail "grade class exited $status (every student was graded: 0)"
"${grade[@]}" merge "$work/results" --gradebook "$work/book" >"$work/merge.out" 2>&1
status=$?
cat "$work/merge.out"
((status == 0)) || fail "grade merge exited $status: the gradebook is complete"
book=$(tr -d '\r' <"$work/book/gradebook.csv")
echo "$book"
row() { grep "^$1," <<<"$book" || fail "no row for $1: $book"; }
verdict_of() { row "$1" | cut -d, -f5; }
[[ $(verdict_of ann) == passed ]] || fail "ann: $(row ann)"
[[ $(verdict_of bob) == failed ]] || fail "bob: $(row bob)"
[[ $(verdict_of cat) == invalid_submission ]] || fail "cat (exercises/ links to the model solutions): $(row cat)"
[[ $(verdict_of dan) == invalid_submission ]] || fail "dan (a link out of the folder): $(row dan)"
[[ $(verdict_of eve) == invalid_submission ]] || fail "eve (two different answers): $(row eve)"
[[ $(verdict_of fay) == no_submission ]] || fail "fay: $(row fay)"
[[ $(verdict_of gus) == passed ]] || fail "gus (a link inside the folder): $(row gus)"
[[ $(verdict_of hal) == invalid_submission ]] || fail "hal (the folder is a link): $(row hal)"
[[ $(verdict_of ivy) == runtime_error ]] || fail "ivy (aborts): $(row ivy)"
[[ $(verdict_of "$long") == failed ]] || fail "the 240-byte id: $(row "$long")"
# Student ids byte for byte: the key a roster joins on.
[[ $(verdict_of -rf) == passed ]] || fail "-rf: the id is not written as it is: $book"
grep -q "student id '-rf'" "$work/merge.out" || fail "merge does not warn of the formula-like id: $(cat "$work/merge.out")"
# Every row has its total: the gradebook is complete.
while IFS=, read -r student score _; do
  [[ $student == student ]] && continue
  [[ -n $score ]] || fail "$student has no total"
done <<<"$book"
# The reasons, in the student's result and the gradebook.
grep -q "symbolic link" "$work/results/cat/exercise_sdpa.json" || fail "cat's result says no why: $(cat "$work/results/cat/exercise_sdpa.json")"
grep -q "sdpa.cpp" "$work/results/eve/exercise_sdpa.json" || fail "eve's result names no file"
grep -q "SDPA (1).cpp" "$work/results/fay/exercise_sdpa.json" || fail "fay's result does not name the near miss"
grep "^fay," <<<"$book" | grep -q "SDPA (1).cpp" || fail "the gradebook does not warn of fay's near miss"
echo "PASSED: 11 students, a complete gradebook, class and merge exit 0"
