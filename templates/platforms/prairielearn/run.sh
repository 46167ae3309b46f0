#!/usr/bin/env bash
# PrairieLearn's external grader entry point: run.sh EXERCISE grades the
# student's file in /grade/student and writes /grade/results/results.json. It
# exits 0 whatever the grade: the score and the reasons are in results.json.
#
# PL_GRADE_ROOT replaces /grade, GRADER_ROOT and GRADER_BUILD the image's
# grader folders (the test suite runs this package without PrairieLearn).
set -uo pipefail
if (($# != 1)); then
  echo "usage: run.sh EXERCISE" >&2
  exit 2
fi
top=${PL_GRADE_ROOT:-/grade}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
grader=${GRADER_ROOT:-$here/grader}
build=${GRADER_BUILD:-$grader/build}
case $1 in
@FILES@
  *) echo "run.sh: no exercise $1 in this package" >&2; exit 2 ;;
esac
mkdir -p "$top/results"
"$build/grader/grade" --root "$grader" --build-dir "$build" "$1" --submission "$top/student/$file" --within "$top/student" \
  --format text --output "prairielearn=$top/results/results.json" @OPTIONS@
exit 0
