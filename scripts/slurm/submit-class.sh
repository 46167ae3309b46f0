#!/usr/bin/env bash
# Grades a class folder on a Slurm cluster: builds the grader, queues a job
# array (one task per shard) and, after it, the merge into a gradebook.
#
#   scripts/slurm/submit-class.sh [--shards N] [--cpus-per-task C] \
#       CLASS_DIR RESULTS_DIR GRADEBOOK_DIR [-- grade options, e.g. --sandbox strict]
#
# CLASS_DIR holds one folder per student (docs/teaching.md). All three
# folders and this checkout must be on a file system the compute nodes share.
# sbatch's own environment variables pass through (SBATCH_PARTITION,
# SBATCH_ACCOUNT, SBATCH_TIMELIMIT, ...). Prints the two job ids; the merge
# job's output says whether the gradebook is complete (exit 0) or what is
# missing (exit 3: a shard to run again, never a learner's failure).
set -euo pipefail

usage() {
  echo "usage: $0 [--shards N] [--cpus-per-task C] CLASS_DIR RESULTS_DIR GRADEBOOK_DIR [-- grade options]" >&2
  exit 2
}
shards=4 cpus=2
while (($#)); do
  case $1 in
    --shards) shards=${2:-}; shift 2 || usage ;;
    --cpus-per-task) cpus=${2:-}; shift 2 || usage ;;
    --) break ;;
    -*) usage ;;
    *) break ;;
  esac
done
(($# >= 3)) || usage
[[ $shards =~ ^[1-9][0-9]*$ && $cpus =~ ^[1-9][0-9]*$ ]] || usage
class=$(realpath "$1") results=$(realpath -m "$2") gradebook=$(realpath -m "$3")
shift 3
[[ ${1:-} == -- ]] && shift
[[ -d $class ]] || { echo "$0: no class folder $class" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${GRADE_BUILD_DIR:-$root/build}
# Build once here (and install what is missing when run as root), so the
# tasks only run it.
"$root/grade" build >/dev/null
mkdir -p "$results/.logs" "$gradebook"

export GRADER_ROOT=$root GRADER_BUILD=$build
array=$(sbatch --parsable --array="0-$((shards - 1))" --cpus-per-task="$cpus" \
  --output="$results/.logs/slurm-%A_%a.out" --export=ALL \
  "$root/scripts/slurm/grade-class.sbatch" "$class" "$results" "$@")
array=${array%%;*}
# afterany: the merge runs even when a task failed, and says which shard to run again.
# Its folders are the script's arguments: no shell ever re-reads them.
merge=$(sbatch --parsable --dependency="afterany:$array" --output="$gradebook/merge-%j.out" --export=ALL \
  "$root/scripts/slurm/merge.sbatch" "$results" "$gradebook")
merge=${merge%%;*}
echo "array job $array ($shards shards of $class), merge job $merge -> $gradebook/gradebook.csv"
