#!/usr/bin/env bash
# Editor support: clangd's check mode on every starter and a model solution
# must find the compile commands the build wrote for editors
# (build/learner/compile_commands.json, through exercises/.clangd and
# solutions/.clangd) and report no error: completion and diagnostics work
# out of the box.
#   tests/clangd_test.sh ROOT BUILD
# Exit 77 (skipped, reason printed) without clangd, or with a build folder
# other than ROOT/build (the .clangd files name ../build/learner).
set -uo pipefail
root=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
command -v clangd >/dev/null || { echo "SKIPPED: clangd is not installed (Debian: clangd)"; exit 77; }
[[ $build == "$root/build" ]] ||
  { echo "SKIPPED: the .clangd files point at $root/build/learner, this build is $build"; exit 77; }
[[ -f $build/learner/compile_commands.json ]] || { echo "FAILED: the build wrote no build/learner/compile_commands.json"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
check() {  # FILE: clangd --check, its log in $work
  local log=$work/$(echo "$1" | tr / _).log
  clangd --check="$1" >"$log" 2>&1
  local status=$?
  if ((status != 0)) || ! grep -q "All checks completed, 0 errors" "$log" ||
    ! grep -q "Loaded compilation database from .*build/learner/compile_commands.json" "$log"; then
    echo "FAILED: $1 (clangd exit $status)"
    grep -E "^E\[|compilation database" "$log" | head -10
    return 1
  fi
  echo "ok: $1"
}
export -f check
export work
# Every starter, and one model solution: the solutions share their starters'
# compile commands (solutions/.clangd names the same database), and each is
# compiled by corpus.<exercise>.solution_and_starter, so one shows that
# solutions/.clangd works; each parse costs about 6 s of a core.
solutions=("$root"/solutions/*/*.cpp)
files=("$root"/exercises/*/*.cpp "${solutions[0]}")
printf '%s\n' "${files[@]}" | xargs -P 2 -I{} bash -c 'check "$1"' _ {} || exit 1
echo "PASSED: ${#files[@]} files, no error, the grader's compile commands"
