#!/usr/bin/env bash
# The text report on a real terminal (script(1) gives the grader a TTY):
# coloured by default, plain with NO_COLOR set, coloured again with
# --color always (a per-run option beats NO_COLOR: no-color.org).
#   tests/cli_color_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
command -v script >/dev/null || { echo "SKIPPED: script(1) is not installed (util-linux)"; exit 77; }
grade="$(printf '%q ' "$build/grader/grade" --root "$root" --build-dir "$build" exercise_sdpa \
  --submission "$root/solutions/exercise_sdpa/sdpa.cpp")"
esc=$'\e['
on_tty() { script -qec "$1" /dev/null; }
out=$(on_tty "env -u NO_COLOR $grade")
[[ $out == *"$esc"* ]] || { echo "FAILED: no colour on a terminal"; exit 1; }
out=$(on_tty "NO_COLOR=1 $grade")
[[ $out != *"$esc"* ]] || { echo "FAILED: colour despite NO_COLOR"; exit 1; }
out=$(on_tty "NO_COLOR=1 $grade --color always")
[[ $out == *"$esc"* ]] || { echo "FAILED: --color always did not beat NO_COLOR"; exit 1; }
out=$(env -u NO_COLOR $grade | cat)
[[ $out != *"$esc"* ]] || { echo "FAILED: colour into a pipe"; exit 1; }
echo "PASSED: colour on a terminal, none with NO_COLOR or into a pipe, --color always wins"
