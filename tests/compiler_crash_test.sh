#!/usr/bin/env bash
# A submission that crashes the compiler leaves nothing behind: no
# preprocessed copy of the source and no reproducer script in the machine's
# temporary folder, with the sandbox (its private /tmp) or without it.
#   tests/compiler_crash_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
grade=("$build/grader/grade" --root "$root" --build-dir "$build")
file=$root/tests/submissions/exercise_sdpa/hostile/crashes_the_compiler.cpp
fail() { echo "FAILED: $*"; exit 1; }
# Clang names them after the compiled copy of the source (sdpa.cpp): sdpa-XXXXXX.cpp and .sh.
leftovers() { find /tmp -maxdepth 1 -name 'sdpa-*' 2>/dev/null | sort; }
before=$(leftovers)
for mode in auto off; do
  "${grade[@]}" exercise_sdpa --submission "$file" --sandbox "$mode" --format json >"$build/compiler_crash.$mode.json" 2>&1
  # Without bwrap, user nobody walks the real path: a checkout in a private
  # folder (a root user's home, mktemp -d) cannot be graded that way at all.
  if [[ $mode == off ]] && grep -q '"verdict": *"grader_error"' "$build/compiler_crash.$mode.json" &&
     grep -q 'cannot enter' "$build/compiler_crash.$mode.json"; then
    echo "--sandbox off NOT checked here: $(grep -o '"summary": *"[^"]*' "$build/compiler_crash.$mode.json" | head -c 300)"
    continue
  fi
  grep -q '"verdict": *"compile_error"' "$build/compiler_crash.$mode.json" || fail "--sandbox $mode: not a compile_error"
  after=$(leftovers)
  [[ "$after" == "$before" ]] || fail "--sandbox $mode left in /tmp: $(comm -13 <(echo "$before") <(echo "$after"))"
done
echo "OK: the compiler crashed and left nothing in /tmp"
