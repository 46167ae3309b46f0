#!/usr/bin/env bash
# What forking runners from a zygote saves (grader/judge/zygote.h): one exercise's
# accepted and wrong corpus graded as one batch (compiled code cached, so the
# runs are what is timed), with a fresh runner per grade (GRADER_FRESH_RUNNERS=1,
# the baseline) and with runners forked from a zygote, alternated, N runs each.
# Prints the median wall and CPU seconds of each and their ratio, and whether
# every verdict and missed set agreed.
#   bench/runner_start.sh [--runs N] [--exercise ID] [--jobs N]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs=3 exercise=exercise_mha jobs=1
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --exercise) exercise="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--exercise ID] [--jobs N]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=()
for file in "$root/tests/submissions/$exercise"/{accepted,wrong}/*.cpp; do args+=(--submission "$file"); done
median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }
grade_once() {  # LABEL FRESH(0|1) RUN
  local out="$work/$1-$3.json"
  GRADER_FRESH_RUNNERS=$2 /usr/bin/time -f "%e %U %S" -o "$work/$1-$3.time" \
    "$root/grade" "$exercise" "${args[@]}" --jobs "$jobs" --format json --color never >"$out" 2>/dev/null || true
  python3 -c '
import json, sys
reports = json.load(open(sys.argv[1]))
for r in reports:
    missed = sorted(f["id"] for f in r["focus_points"] if f["status"] == "missed")
    print(r["submission"], r["verdict"], ",".join(missed))' "$out" | sort >"$work/$1-$3.verdicts"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "exercise: $exercise, $((${#args[@]} / 2)) files, --jobs $jobs, runs: $runs"
"$root/grade" "$exercise" "${args[@]}" --format json >/dev/null 2>&1 || true  # builds, fills the compile cache
for ((i = 0; i < runs; i++)); do
  grade_once fresh 1 "$i"
  grade_once zygote 0 "$i"
done
same=yes
for ((i = 0; i < runs; i++)); do
  for kind in fresh zygote; do cmp -s "$work/fresh-0.verdicts" "$work/$kind-$i.verdicts" || same=no; done
done
for kind in fresh zygote; do
  wall=$(for ((i = 0; i < runs; i++)); do awk '{print $1}' "$work/$kind-$i.time"; done | median)
  cpu=$(for ((i = 0; i < runs; i++)); do awk '{print $2 + $3}' "$work/$kind-$i.time"; done | median)
  printf '%-7s wall %6.2f s   cpu %6.2f s\n' "$kind" "$wall" "$cpu"
  eval "${kind}_wall=$wall"
done
awk -v a="$fresh_wall" -v b="$zygote_wall" 'BEGIN {printf "zygote / fresh (wall): %.2f\n", b / a}'
echo "verdicts and missed sets the same in every run: $same"
