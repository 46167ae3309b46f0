#!/usr/bin/env bash
# Verdicts that do not depend on the machine's load (issue 47): the heaviest
# correct files of several exercises, and a hostile file whose verdict comes
# from a limit, are graded on a quiet machine and again beside busy processes
# that load every core LOAD_PER_CORE times over (default 8); every verdict must
# be the same. The limits count the runner's own time, not the time it waited
# for a CPU (grader/judge/stall.h); each grade prints that wait (from its JSON
# report) and its wall time.
#   tests/load_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
per_core=${LOAD_PER_CORE:-8}
work=$(mktemp -d)
chmod 711 "$work"
busy=()
cleanup() {
  ((${#busy[@]})) && kill "${busy[@]}" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
command -v python3 >/dev/null || { echo "SKIPPED: python3 reads the JSON reports"; exit 77; }

# Heavy correct files (the mini encoder trains 40 Adam steps in one case:
# it timed out at this load when the limits were wall-clock), and a
# hostile file that must keep its verdict (it hangs after correct results).
files=(
  exercise_mini_encoder:solutions/exercise_mini_encoder/mini_encoder.cpp
  exercise_flash_attention:tests/submissions/exercise_flash_attention/accepted/key_blocks.cpp
  exercise_mini_gpt:solutions/exercise_mini_gpt/mini_gpt.cpp
  exercise_kv_cache:tests/submissions/exercise_kv_cache/accepted/tokens_major_store.cpp
  exercise_sdpa:tests/submissions/exercise_sdpa/hostile/hangs_after_correct_results.cpp
)

cat >"$work/read.py" <<'PY'
import json, sys
path, report, start, end = sys.argv[1:5]
try:
    d = json.load(open(report))
except ValueError:
    d = {"verdict": "no-report"}
t = d.get("timing", {})
print(path, d.get("verdict"), "%.2f" % t.get("waited_for_cpu_seconds", 0), "%.2f" % (float(end) - float(start)))
PY

grade_all() {  # every file with seed 1: "file verdict waited wall", one line each
  local entry ex file start
  for entry in "${files[@]}"; do
    ex=${entry%%:*} file=${entry#*:}
    [[ -f $root/$file ]] || { echo "missing $file" >&2; return 1; }
    start=$(date +%s.%N)
    "$build/grader/grade" --root "$root" --build-dir "$build" "$ex" --submission "$root/$file" --seed 1 \
      --format json >"$work/report.json" 2>"$work/err"
    python3 "$work/read.py" "$file" "$work/report.json" "$start" "$(date +%s.%N)"
  done
}

started=$(date +%s)
grade_all >"$work/quiet" || exit 1
cores=$(nproc)
for _ in $(seq 1 $((per_core * cores))); do
  # Each in a session of its own, as other users' work is: the scheduler's
  # autogroups would otherwise give the grade's own session half the machine.
  setsid bash -c 'while :; do :; done' &
  busy+=($!)
done
sleep 1
grade_all >"$work/loaded" || exit 1
kill "${busy[@]}" 2>/dev/null
busy=()

echo "quiet machine (file, verdict, seconds the runner waited for a CPU, wall seconds of the grade):"
cat "$work/quiet"
echo "beside $((per_core * cores)) busy processes on $cores cores:"
cat "$work/loaded"
echo "($(($(date +%s) - started)) s in all)"
status=0
while read -r file verdict _; do
  loaded=$(awk -v f="$file" '$1 == f {print $2}' "$work/loaded")
  if [[ $verdict != "$loaded" ]]; then
    echo "FAILED: $file is $verdict on a quiet machine but $loaded under load"
    status=1
  fi
  case $file in
    */accepted/* | solutions/*) [[ $verdict == passed ]] || { echo "FAILED: $file (correct) got $verdict"; status=1; } ;;
  esac
done <"$work/quiet"
exit $status
