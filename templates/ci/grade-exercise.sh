#!/usr/bin/env bash
# Grades one exercise of this repository in CI and writes its reports:
#
#   bash templates/ci/grade-exercise.sh EXERCISE REPORT_DIR
#
# writes REPORT_DIR/EXERCISE.xml (JUnit), REPORT_DIR/EXERCISE.json (the
# grader's JSON) and REPORT_DIR/EXERCISE.classroom.json (GitHub Classroom's
# autograding result), prints the text report, and exits with grade's status:
# 0 passed, 1 not passed, 2 usage error, 3 grader fault, 4 not assessed here
# (the CUDA exercise without a GPU). grade-changed.sh, which the CI files
# beside this one run, calls it for each exercise to grade.
#
# Environment: GRADE_SANDBOX (default strict: refuse to grade without full
# isolation; set it to auto where the CI runner is not privileged), and what
# ./grade reads (GRADE_BUILD_DIR, GRADE_JOBS, CMAKE_PREFIX_PATH, Torch_DIR).
# Run as root on a bare Debian bookworm, ./grade installs the Debian packages it
# needs and builds the grader on first use.
set -euo pipefail

usage() {
  echo "usage: bash templates/ci/grade-exercise.sh EXERCISE REPORT_DIR   (EXERCISE: see ./grade list)" >&2
  exit 2
}
(($# == 2)) || usage
exercise=$1
# The id names the report files: no paths, no options.
[[ "$exercise" =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]] || usage
[[ -n "$2" ]] || usage

# REPORT_DIR is taken from where the script was called, then we work from the
# repository root (two folders above this script).
mkdir -p -- "$2"
reports=$(cd -- "$2" && pwd)
cd -- "$(dirname -- "${BASH_SOURCE[0]}")/../.."

# Build with every core the runner has (./grade's default is 2).
export GRADE_JOBS="${GRADE_JOBS:-$(nproc 2>/dev/null || echo 2)}"

status=0
./grade "$exercise" --sandbox "${GRADE_SANDBOX:-strict}" --format text \
  --output "junit=$reports/$exercise.xml" --output "json=$reports/$exercise.json" \
  --output "classroom=$reports/$exercise.classroom.json" || status=$?

case $status in
  0) meaning="passed" ;;
  1) meaning="not passed" ;;
  2) meaning="usage or configuration error" ;;
  3) meaning="the grader itself failed" ;;
  4) meaning="not assessed here: it needs a GPU" ;;
  *) meaning="unexpected exit status" ;;
esac
echo "grade-exercise: $exercise: exit $status ($meaning); reports in $reports" >&2
[[ -f "$reports/$exercise.xml" ]] || echo "grade-exercise: no JUnit report was written ($reports/$exercise.xml)" >&2
exit "$status"
