#!/usr/bin/env bash
# Nothing a learner or an editor does inside an exercise's folder makes the
# grader stale (issue 29): after a save by rename (sed -i, most editors), a
# save in place, swap, backup and lock files, a new file and a new folder,
# the next ./grade takes the fast path. An input of the grader that changes
# (here: a folder added to exercises/, which may be a new exercise) does not.
# Runs ./grade itself, alone (RUN_SERIAL): it saves the starter in place.
#   tests/editor_save_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
export GRADE_BUILD_DIR=$build GRADE_EXPLAIN=1
dir=$root/exercises/exercise_sdpa
file=$dir/sdpa.cpp
work=$(mktemp -d)
cp -p "$file" "$work/original"
extra=("$dir/.sdpa.cpp.swp" "$dir/4913" "$dir/sdpa.cpp~" "$dir/#sdpa.cpp#" "$dir/.#sdpa.cpp" "$dir/notes.cpp"
  "$dir/scratch" "$root/exercises/zz_not_an_exercise_$$")
restore() { cat "$work/original" >"$file"; rm -rf "${extra[@]}" "$work"; }
trap restore EXIT
fail() { echo "FAILED: $*"; exit 1; }
path_of() { "$root/grade" exercise_sdpa --help 2>&1 >/dev/null | grep "^grade: \(fast path\|checking\)"; }
fast() {
  local said
  said=$(path_of)
  [[ $said == *"fast path"* ]] || fail "after $1 the grade took the slow path: $said"
  echo "ok: $1"
}

"$root/grade" build exercise_sdpa >/dev/null 2>&1 || fail "./grade build exercise_sdpa failed"
fast "a build"
sed -i 's/a/a/' "$file"
fast "a save by rename (sed -i)"
cat "$work/original" >"$file"
fast "a save in place"
touch "$dir/.sdpa.cpp.swp" "$dir/4913" "$dir/sdpa.cpp~" "$dir/#sdpa.cpp#"
ln -s "root@host.1234" "$dir/.#sdpa.cpp"
rm -f "$dir/4913"
fast "swap, backup and lock files (vim, emacs)"
cp "$file" "$dir/notes.cpp"
mkdir -p "$dir/scratch"
fast "a new file and a new folder in the exercise"
mv "$file" "$work/moved" && mv "$work/moved" "$file"
fast "the file moved away and back"

mkdir "$root/exercises/zz_not_an_exercise_$$"
said=$(path_of)
[[ $said == *checking* && $said == *exercises* ]] || fail "a folder added to exercises/ was not seen: $said"
echo "ok: a folder added to exercises/ is checked"
rmdir "$root/exercises/zz_not_an_exercise_$$"
"$root/grade" exercise_sdpa --help >/dev/null 2>&1
fast "the check after it"
echo "PASSED"
