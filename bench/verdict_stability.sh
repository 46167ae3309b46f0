#!/usr/bin/env bash
# Whether correct files keep their pass under load: the exercise's accepted
# files and model solution graded on five seeds as one batch (--jobs 2, as the
# seed sweep does; --jobs to change it), round after round, with a batch of another exercise
# running beside it. Prints every grade that did not pass, with its failed or
# skipped checks, and a count per round. A correct file must pass every time.
#
#   bench/verdict_stability.sh [--exercise ID] [--rounds N] [--beside ID] [--jobs N]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exercise=exercise_mini_encoder rounds=6 beside=exercise_rope jobs=2
while (($#)); do
  case "$1" in
    --exercise) exercise="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --beside) beside="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    *) echo "usage: $0 [--exercise ID] [--rounds N] [--beside ID] [--jobs N]" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=()
for file in "$root/tests/submissions/$exercise/accepted/"*.cpp "$root/solutions/$exercise/"*.cpp; do
  args+=(--submission "$file")
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "$exercise: $((${#args[@]} / 2)) correct files, seeds 1-5, --jobs $jobs, beside a batch of $beside; $rounds rounds"
failures=0
for round in $(seq 1 "$rounds"); do
  "$root/build/grader/grade" "$beside" --root "$root" --submission "$root/tests/submissions/$beside/wrong" \
    --seeds 1,2,3 --jobs 2 --format json >/dev/null 2>&1 &
  "$root/build/grader/grade" "$exercise" --root "$root" "${args[@]}" --seeds 1,2,3,4,5 --jobs "$jobs" --format json \
    >"$work/round.json" 2>/dev/null || true
  wait || true
  bad=$(python3 - "$work/round.json" <<'PY'
import json, sys
reports = json.load(open(sys.argv[1]))
bad = [r for r in reports if r.get("verdict") != "passed"]
for r in bad:
    print(f"  {r['submission']} seed {r['seed']}: {r['verdict']}: {r['summary'][:160]}")
    for check in r["checks"]:
        if check["status"] != "passed" and not check.get("needs_gpu"):
            print(f"    {check['status']} {check['id']}: {check['message'][:160]}")
            for line in check["evidence"][:4]:
                print(f"      {line[:200]}")
print(f"round: {len(reports)} grades, {len(bad)} not passed")
PY
)
  echo "$bad"
  [[ $bad == *"0 not passed" ]] || failures=$((failures + 1))
done
echo "rounds with a correct file not passed: $failures of $rounds"
