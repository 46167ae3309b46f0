#!/usr/bin/env bash
# Long fuzzing runs (docs/fuzzing.md): builds the fuzzers, then runs each one
# for SECONDS (default 600) on one core, one after the other, over a corpus
# kept in BUILD/fuzz/<target>-long-corpus (seeded like the tests, grown across
# runs), and prints the figures docs/fuzzing.md records.
#
#   tests/fuzz/long_run.sh [SECONDS [TARGET...]]     TARGET: wire, exercise_yaml (default both)
#
# Environment: GRADE_BUILD_DIR (default ./build). Exit status 1 if a fuzzer
# found a problem; the input is then BUILD/fuzz/<target>-long-crash-* (or -leak-,
# -timeout-, -oom-) and the log BUILD/fuzz/<target>-long.log.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${GRADE_BUILD_DIR:-$root/build}"
seconds="${1:-600}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(wire exercise_yaml)

cmake --build "$build" --parallel 2 --target "${targets[@]/#/fuzz_}"

status=0
for target in "${targets[@]}"; do
  corpus="$build/fuzz/$target-long-corpus"
  log="$build/fuzz/$target-long.log"
  mkdir -p "$corpus"
  case "$target" in
    wire)
      seeds=("$build"/fuzz/wire-seeds/*) dict="$root/tests/fuzz/wire.dict" ;;
    exercise_yaml)
      seeds=("$root"/exercises/*/exercise.yaml "$root"/tests/fuzz/regressions/*)
      dict="$root/tests/fuzz/exercise_yaml.dict" ;;
    *) echo "unknown target $target" >&2; exit 2 ;;
  esac
  i=0  # numbered: the exercises' files share one name
  for seed in "${seeds[@]}"; do
    i=$((i + 1))
    cp "$seed" "$corpus/seed-$i-$(basename "$seed")"
  done
  echo "== $target: ${seconds} s, corpus $corpus, log $log" >&2
  rc=0
  # One process, one worker: the machine has two cores and the other one is for
  # whatever else runs.
  "$build/fuzz/$target" "$corpus" -dict="$dict" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz/$target-long-" >"$log" 2>&1 || rc=$?
  done_line=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE)' "$log" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log")
  slowest=$(sed -n 's/^stat::slowest_unit_time_sec: *//p' "$log")
  cov=$(sed -n 's/.* cov: \([0-9]*\) .*/\1/p' <<<"$done_line")
  ft=$(sed -n 's/.* ft: \([0-9]*\) .*/\1/p' <<<"$done_line")
  corp=$(sed -n 's/.* corp: \([^ ]*\) .*/\1/p' <<<"$done_line")
  problems=$(grep -cE '^==[0-9]+==ERROR|runtime error:|ERROR: libFuzzer' "$log" || true)
  echo "$target: exit $rc, executions ${execs:-?}, exec/s ${rate:-?}, cov ${cov:-?}, ft ${ft:-?}, corpus ${corp:-?}," \
    "peak RSS ${rss:-?} MB, slowest input ${slowest:-?} s, problems ${problems}"
  if ((rc != 0)); then
    status=1
    grep -E -A30 '^==[0-9]+==ERROR|runtime error:|ERROR: libFuzzer' "$log" | head -60 >&2 || true
  fi
done
exit "$status"
