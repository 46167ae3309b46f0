#!/usr/bin/env bash
# The seed sweep's cost: an exercise's labelled files (accepted and wrong) on
# seeds 1-5, graded one seed at a time (five batches, each file's runner
# loading LibTorch every time: the baseline) against one `--seeds 1,2,3,4,5`
# batch (each file's five seeds in one runner). Both interleaved, after a
# warm-up run; medians of RUNS. Compile caches are warm after the first run.
#
#   bench/seed_sweep.sh [RUNS] [EXERCISE...]   (default: 3, exercise_sdpa exercise_mha)
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${1:-3}
shift || true
exercises=("$@")
((${#exercises[@]})) || exercises=(exercise_sdpa exercise_mha)
median() { sort -n | sed -n "$(((runs + 1) / 2))p"; }
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { print a - b }'; }
printf '%-28s %6s %12s %12s %8s\n' exercise files "one by one" "--seeds" ratio
for e in "${exercises[@]}"; do
  args=()
  for f in "$root/tests/submissions/$e"/{accepted,wrong}/*.cpp; do [[ -f $f ]] && args+=(--submission "$f"); done
  declare -a base=() new=()
  for ((r = 0; r <= runs; r++)); do  # run 0 warms the compile cache
    start=$(now)
    for s in 1 2 3 4 5; do "$root/grade" "$e" --seed "$s" --jobs 2 --format json "${args[@]}" >/dev/null 2>&1; done
    t=$(since "$start")
    ((r > 0)) && base+=("$t")
    start=$(now)
    "$root/grade" "$e" --seeds 1,2,3,4,5 --jobs 2 --format json "${args[@]}" >/dev/null 2>&1
    t=$(since "$start")
    ((r > 0)) && new+=("$t")
  done
  b=$(printf '%s\n' "${base[@]}" | median)
  n=$(printf '%s\n' "${new[@]}" | median)
  printf '%-28s %6d %11.1fs %11.1fs %8.2f\n' "$e" $((${#args[@]} / 2)) "$b" "$n" "$(awk -v n="$n" -v b="$b" 'BEGIN { print n / b }')"
done
