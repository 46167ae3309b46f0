#!/usr/bin/env bash
# Class-scale throughput on this one node, submissions per minute, medians of
# several interleaved runs, every file compiled (--no-cache), each variant
# against a baseline measured in the same run:
#   direct   `grade class --jobs 2` (no scheduler): the baseline
#   jobs1    `grade class --jobs 1`: one grade at a time
#   slurm2x1 a one-node Slurm (scripts/slurm/local-cluster.sh): 2 array
#            tasks of 1 CPU each, submit to gradebook (queueing and merge included)
#   slurm1x2 the same with 1 task of 2 CPUs (--jobs 2 inside it)
# Slurm variants are left out, with the reason, where Slurm cannot start.
#
#   bench/class_throughput.sh [--runs N] [--students N]
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=${GRADE_BUILD_DIR:-$root/build}
runs=3 students=12
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --students) students="$2"; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--students N]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d /tmp/class-bench.XXXXXX)
chmod 711 "$work"
trap 'bash "$root/scripts/slurm/local-cluster.sh" stop "$work/cluster"; rm -rf "$work"' EXIT
"$root/grade" list >/dev/null

# The class: each student hands in every exercise, drawn in turn from the
# corpus's accepted and wrong files (what a class looks like: most compile,
# some pass).
mapfile -t pool_sdpa < <(ls "$root"/tests/submissions/exercise_sdpa/{accepted,wrong}/*.cpp)
mapfile -t pool_mhsa < <(ls "$root"/tests/submissions/exercise_mhsa/{accepted,wrong}/*.cpp)
mapfile -t pool_mha < <(ls "$root"/tests/submissions/exercise_mha/{accepted,wrong}/*.cpp)
for ((s = 0; s < students; s++)); do
  dir=$work/class/student$(printf %03d "$s")
  mkdir -p "$dir"
  cp "${pool_sdpa[s % ${#pool_sdpa[@]}]}" "$dir/sdpa.cpp"
  cp "${pool_mhsa[s % ${#pool_mhsa[@]}]}" "$dir/mhsa.cpp"
  cp "${pool_mha[s % ${#pool_mha[@]}]}" "$dir/mha.cpp"
done
items=$((students * 3))

slurm=1
if cluster=$(bash "$root/scripts/slurm/local-cluster.sh" start "$work/cluster" 2>"$work/cluster.err"); then
  eval "$cluster"
else
  slurm=0
fi

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }
per_minute() { awk -v n="$items" -v s="$1" 'BEGIN {printf "%.1f", 60 * n / s}'; }

run_direct() {  # jobs
  rm -rf "$work/results"
  "$build/grader/grade" --root "$root" --build-dir "$build" class "$work/class" --results "$work/results" \
    --jobs "${1:-2}" --no-cache >/dev/null 2>&1
  "$build/grader/grade" --root "$root" --build-dir "$build" merge "$work/results" --gradebook "$work/book" >/dev/null
}
run_slurm() {  # shards cpus
  rm -rf "$work/results" "$work/book"
  GRADE_BUILD_DIR=$build bash "$root/scripts/slurm/submit-class.sh" --shards "$1" --cpus-per-task "$2" \
    "$work/class" "$work/results" "$work/book" -- --no-cache >/dev/null
  while [[ -n $(squeue -h -o %i) ]]; do sleep 0.2; done
  grep -q '^incomplete' "$work"/book/merge-*.out && echo "bench: incomplete gradebook" >&2
}
timed() { local t0 t1; t0=$(now); "$@"; t1=$(now); awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f\n", b - a}'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "class: $students students x 3 exercises = $items submissions, every file compiled; runs: $runs (interleaved)"
direct=() jobs1=() s21=() s12=()
for ((r = 0; r < runs; r++)); do
  direct+=("$(timed run_direct 2)")
  jobs1+=("$(timed run_direct 1)")
  if ((slurm)); then
    s21+=("$(timed run_slurm 2 1)")
    s12+=("$(timed run_slurm 1 2)")
  fi
done
base=$(printf '%s\n' "${direct[@]}" | median)
echo "direct   (grade class --jobs 2):  median $base s  ($(per_minute "$base")/min)  runs: ${direct[*]}"
m=$(printf '%s\n' "${jobs1[@]}" | median)
echo "jobs1    (grade class --jobs 1):  median $m s  ($(per_minute "$m")/min, $(awk -v a="$m" -v b="$base" 'BEGIN {printf "%.2f", a / b}')x the direct time)  runs: ${jobs1[*]}"
if ((slurm)); then
  for name in s21 s12; do
    declare -n times=$name
    m=$(printf '%s\n' "${times[@]}" | median)
    label=$([[ $name == s21 ]] && echo "slurm2x1 (2 tasks x 1 CPU):    " || echo "slurm1x2 (1 task x 2 CPUs):    ")
    echo "$label median $m s  ($(per_minute "$m")/min, $(awk -v a="$m" -v b="$base" 'BEGIN {printf "%.2f", a / b}')x the direct time)  runs: ${times[*]}"
  done
else
  echo "slurm: not measured ($(tail -1 "$work/cluster.err"))"
fi
