#!/usr/bin/env bash
# A learner's edit-to-report on the same machine for two checkouts (each with
# its build folder): grading every exercise's model solution (its compile
# cached after the first grade), the two interleaved, median of N runs each.
# The baseline is OLD, measured in the same run.
#
#   bench/compare_builds.sh OLD_CHECKOUT NEW_CHECKOUT [RUNS]
set -u
if (($# < 2)); then
  echo "usage: $0 OLD_CHECKOUT NEW_CHECKOUT [RUNS]" >&2
  exit 2
fi
old_root=$1 new_root=$2 runs=${3:-5}
median() { sort -n | sed -n "$(( (runs + 1) / 2 ))p"; }
for dir in "$new_root"/exercises/exercise_*/; do
  e=$(basename "$dir")
  [[ $e == exercise_softmax_cuda ]] && continue  # needs a GPU to pass
  declare -a old=() new=()
  for ((r = 0; r <= runs; r++)); do  # run 0 warms both (compile cache, page cache)
    for side in old new; do
      root=$old_root
      [[ $side == new ]] && root=$new_root
      solution=$(ls "$root/solutions/$e/"*.cpp 2>/dev/null | head -1)
      [[ -z $solution ]] && continue
      start=$(date +%s.%N)
      "$root/grade" "$e" --submission "$solution" >/dev/null 2>&1
      t=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { print a - b }')
      ((r == 0)) && continue
      if [[ $side == old ]]; then old+=("$t"); else new+=("$t"); fi
    done
  done
  ((${#old[@]} == 0 || ${#new[@]} == 0)) && continue
  mo=$(printf '%s\n' "${old[@]}" | median)
  mn=$(printf '%s\n' "${new[@]}" | median)
  printf '%-30s old %6.2f s  new %6.2f s  new/old %.2f\n' "$e" "$mo" "$mn" "$(awk -v a="$mn" -v b="$mo" 'BEGIN { print a / b }')"
  unset old new
done
