#!/usr/bin/env bash
# Grade latency on this machine, medians of several runs, with a baseline
# measured in the same run:
#   cold     first grade on a fresh build folder (configure + build + grade)
#   edited   re-grade after the learner edited their file (the practice loop)
#   unchanged re-grade of the same file again (its compiled code is cached)
#   memory   peak resident memory of one grade after an edit, compiler included
#   batch    the exercise's accepted and wrong corpus graded as one batch
#            (--no-cache: every file compiled), --jobs 1 and --jobs 2,
#            in submissions per minute
#   baseline the naive way to try the same file: one translation unit that
#            includes <torch/torch.h> with the learner file and a main, linked
#            and run once
#
#   bench/grade_latency.sh [--runs N] [--cold-runs N] [--exercise ID]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
runs=5 cold_runs=1 exercise=exercise_mhsa
while (($#)); do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --cold-runs) cold_runs="$2"; shift 2 ;;
    --exercise) exercise="$2"; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--cold-runs N] [--exercise ID]" >&2; exit 2 ;;
  esac
done
file=$(ls "$root/solutions/$exercise/"*.cpp | head -1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }
timed() { local t0 t1; t0=$(now); "$@" >/dev/null 2>&1 || true; t1=$(now); awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f\n", b - a}'; }

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "exercise: $exercise, submission: ${file#$root/}, runs: $runs (cold: $cold_runs)"
echo "$("$root/grade" sandbox 2>/dev/null || true)"
batch_t=()

# Cold: a fresh build folder each time.
cold=()
for ((i = 0; i < cold_runs; i++)); do
  cold+=("$(GRADE_BUILD_DIR="$work/build-cold-$i" timed "$root/grade" "$exercise" --submission "$file")")
  rm -rf "$work/build-cold-$i"
done

# Warm: the normal build folder, built once before timing.
"$root/grade" "$exercise" --submission "$file" >/dev/null 2>&1 || true
cp "$file" "$work/$(basename "$file")"
edited=()
for ((i = 0; i < runs; i++)); do
  echo "// edit $i $(now)" >>"$work/$(basename "$file")"
  edited+=("$(timed "$root/grade" "$exercise" --submission "$work/$(basename "$file")")")
done

unchanged=()
for ((i = 0; i < runs; i++)); do
  unchanged+=("$(timed "$root/grade" "$exercise" --submission "$work/$(basename "$file")")")
done

# Peak memory of the whole process tree of one grade (compile included).
echo "// edit for memory $(now)" >>"$work/$(basename "$file")"
peak_kb=$(python3 - "$root/build/grader/grade" --root "$root" --build-dir "$root/build" "$exercise" \
  --submission "$work/$(basename "$file")" <<'PY'
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
PY
)

# Batch throughput.
batch_dir="$work/batch"
mkdir -p "$batch_dir"
for f in "$root/tests/submissions/$exercise"/{accepted,wrong}/*.cpp; do cp "$f" "$batch_dir/"; done
batch_n=$(ls "$batch_dir"/*.cpp | wc -l)
batch=()
for j in 1 2; do
  t=$(timed "$root/grade" "$exercise" --submission "$batch_dir" --jobs "$j" --no-cache)
  batch+=("$(awk -v n="$batch_n" -v t="$t" 'BEGIN {printf "%.0f", n * 60 / t}')")
  batch_t+=("$t")
done

# Baseline: the same file compiled the naive way, with a main that builds and runs it once.
header=$(ls "$root/exercises/$exercise/"*.h | head -1)
cat >"$work/naive_main.cpp" <<CPP
#include <torch/torch.h>
#include "$(basename "$header")"
#include "$(basename "$file")"
int main() {
  torch::manual_seed(0);
$(if [[ $exercise == exercise_mhsa ]]; then
    echo '  MultiHeadSelfAttention m(64, 8, 0.1); m->eval(); auto y = m->forward(torch::randn({2, 10, 64}));'
  else
    echo '  auto q = torch::randn({2, 4, 5, 8}); auto r = scaled_dot_product_attention(q, q, q); auto y = std::get<0>(r);'
  fi)
  return y.numel() > 0 ? 0 : 1;
}
CPP
baseline=()
for ((i = 0; i < runs; i++)); do
  baseline+=("$(timed bash -c "c++ -std=c++17 -O0 -I'$root/exercises/$exercise' -I'$(dirname "$file")' \
    -I/usr/include/torch/csrc/api/include '$work/naive_main.cpp' -o '$work/naive' \
    -ltorch -ltorch_cpu -lc10 && '$work/naive'")")
done

cold_m=$(printf '%s\n' "${cold[@]}" | median)
edited_m=$(printf '%s\n' "${edited[@]}" | median)
unchanged_m=$(printf '%s\n' "${unchanged[@]}" | median)
base_m=$(printf '%s\n' "${baseline[@]}" | median)
printf 'cold first grade (configure + build + grade): median %6.1f s  [%s]\n' "$cold_m" "${cold[*]}"
printf 're-grade after an edit:                       median %6.1f s  [%s]\n' "$edited_m" "${edited[*]}"
printf 're-grade of an unchanged file:                median %6.1f s  [%s]\n' "$unchanged_m" "${unchanged[*]}"
printf 'peak resident memory of one grade:            %6.2f GB (largest single process, compiler included)\n' \
  "$(awk -v k="$peak_kb" 'BEGIN {print k / 1048576}')"
printf 'batch of %d files, --jobs 1:                  %6s per minute (%s s)\n' "$batch_n" "${batch[0]}" "${batch_t[0]}"
printf 'batch of %d files, --jobs 2:                  %6s per minute (%s s)\n' "$batch_n" "${batch[1]}" "${batch_t[1]}"
printf 'baseline, naive compile + link + run:         median %6.1f s  [%s]\n' "$base_m" "${baseline[*]}"
awk -v a="$base_m" -v b="$edited_m" 'BEGIN {printf "ratio naive / re-grade after an edit:         %.2f\n", a / b}'
