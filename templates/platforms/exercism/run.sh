#!/usr/bin/env bash
# Exercism's test runner interface: run.sh SLUG INPUT_DIR OUTPUT_DIR grades the
# solution in INPUT_DIR and writes OUTPUT_DIR/results.json (version 3); it
# exits 0 whatever the solution did, as the interface asks. The slug is the
# exercise id without its "exercise_" prefix, with dashes: sdpa, causal-attention.
#
# GRADER_ROOT and GRADER_BUILD replace the image's grader folders (the test
# suite runs this package without Exercism's image).
set -uo pipefail
if (($# < 3)); then
  echo "usage: run.sh SLUG INPUT_DIR OUTPUT_DIR" >&2
  exit 2
fi
slug=$1 input=${2%/} output=${3%/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
grader=${GRADER_ROOT:-$here/grader}
build=${GRADER_BUILD:-$grader/build}
case $slug in
@SLUGS@
  *)
    mkdir -p "$output"
    printf '{"version": 3, "status": "error", "message": "this test runner has no exercise %s", "tests": []}\n' \
      "${slug//[^a-z0-9-]/?}" >"$output/results.json"
    exit 0
    ;;
esac
mkdir -p "$output"
"$build/grader/grade" --root "$grader" --build-dir "$build" "$exercise" --submission "$input/$file" --within "$input" \
  --format text --output "exercism=$output/results.json" @OPTIONS@
exit 0
