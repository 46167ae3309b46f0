#!/usr/bin/env bash
# Grades, in CI, the exercises a push changed (or those named), with
# templates/ci/grade-exercise.sh, and writes their reports:
#
#   bash templates/ci/grade-changed.sh REPORT_DIR
#
# Which exercises: GRADE_EXERCISES (ids separated by spaces or commas, or
# "all"); else those whose learner file differs between GRADE_BASE (the
# commit before the push, or a merge request's base) and HEAD; without a
# usable base (a first push, a shallow clone, a manual run), every exercise
# (the ones still at their starter are then "not started"). Of those, an
# exercise whose file is still its starter is "not started" and the CUDA
# exercise graded without a GPU "not assessed": both neutral, never a failure.
#
# Writes REPORT_DIR/<id>.xml (JUnit), <id>.json, <id>.classroom.json per graded
# exercise and REPORT_DIR/summary.md (one row per exercise). On GitHub Actions
# it also gives GitHub Classroom's grading reporter its inputs: the step output
# `runners` and one <ID>_RESULTS variable per graded exercise.
# Exit: 0 when every graded exercise passed or was neutral, 1 when one did not
# pass, 2 and 3 as grade (a usage error; the grader failed).
set -uo pipefail
usage() {
  echo "usage: bash templates/ci/grade-changed.sh REPORT_DIR   (GRADE_EXERCISES, GRADE_BASE: see the script)" >&2
  exit 2
}
(($# == 1)) && [[ -n $1 ]] || usage
mkdir -p -- "$1"
reports=$(cd -- "$1" && pwd)
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
cd -- "$here/../.."

all=()
for yaml in exercises/*/exercise.yaml; do all+=("$(basename "$(dirname "$yaml")")"); done
learner_file() { sed -n 's/^learner_files: *\[\([^],]*\).*/\1/p' "exercises/$1/exercise.yaml" | tr -d ' '; }
known() { local id; for id in "${all[@]}"; do [[ $id == "$1" ]] && return 0; done; return 1; }

# The checkout may belong to another user (a CI container): trusted here.
git() { command git -c safe.directory="$PWD" "$@"; }
selected=()
named=${GRADE_EXERCISES:-}
base=${GRADE_BASE:-}
if [[ -n ${named//[ ,]/} ]]; then
  read -ra ids <<<"${named//,/ }"  # no glob expansion of what was typed
  for id in "${ids[@]}"; do
    if [[ $id == all ]]; then selected=("${all[@]}"); break; fi
    known "$id" || { echo "grade-changed: no exercise '$id' (see ./grade list)" >&2; exit 2; }
    selected+=("$id")
  done
  why="named in GRADE_EXERCISES"
elif [[ -n $base && ! $base =~ ^0+$ ]] && git cat-file -e "$base^{commit}" 2>/dev/null; then
  changed=$(git diff --name-only "$base" HEAD -- exercises/)
  for id in "${all[@]}"; do
    grep -qxF "exercises/$id/$(learner_file "$id")" <<<"$changed" && selected+=("$id")
  done
  why="changed since ${base:0:12}"
else
  if [[ -n $base && ! $base =~ ^0+$ ]]; then
    echo "grade-changed: the base $base is not in this clone (a shallow clone, a force push?): grading every exercise" >&2
  fi
  selected=("${all[@]}")
  why="every exercise (no earlier commit to compare with)"
fi

summary="| exercise | result |"$'\n'"|---|---|"$'\n'
worst=0 runners=()
for id in "${selected[@]}"; do
  file=exercises/$id/$(learner_file "$id")
  if cmp -s "$file" "exercises/$id/.starter/$(basename "$file")"; then
    echo "grade-changed: $id: not started ($file is the starter): nothing to grade" >&2
    summary+="| $id | not started |"$'\n'
    continue
  fi
  status=0
  bash "$here/grade-exercise.sh" "$id" "$reports" || status=$?
  case $status in
    0) result="passed" ;;
    4) result="not assessed here (needs a GPU)" ;;
    1) result="**not passed**"; ((worst == 0)) && worst=1 ;;
    *) result="**could not be graded (exit $status)**"; ((status > worst)) && worst=$status ;;
  esac
  summary+="| $id | $result |"$'\n'
  # GitHub Classroom's reporter reads <RUNNER>_RESULTS (base64) for each runner.
  if [[ ($status == 0 || $status == 1) && -f $reports/$id.classroom.json && -n ${GITHUB_ENV:-} ]]; then
    echo "${id^^}_RESULTS=$(base64 -w0 "$reports/$id.classroom.json")" >>"$GITHUB_ENV"
    runners+=("$id")
  fi
done
((${#selected[@]})) || summary+="| (none) | no learner file changed |"$'\n'
printf '## Grades (%s)\n\n%s' "$why" "$summary" >"$reports/summary.md"
cat "$reports/summary.md" >&2
if [[ -n ${GITHUB_OUTPUT:-} ]]; then
  (IFS=,; echo "runners=${runners[*]}") >>"$GITHUB_OUTPUT"
fi
exit "$worst"
