#!/usr/bin/env bash
# Whether the BLAS library behind libblas.so.3 (the one Debian's LibTorch
# calls) gives the same product when several threads call it at once
# (bench/blas_threads.cpp). The grader never does (docs/testing.md, "Results
# that depend on load"); this shows why it must not.
#
#   bench/blas_threads.sh [CALLS_PER_THREAD] [THREADS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
calls="${1:-3000}"
threads="${2:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
g++ -O2 -std=c++17 "$here/blas_threads.cpp" -o "$work/blas_threads" -lblas -lpthread
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "BLAS: $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3)"
for n in 16 64 128 256; do "$work/blas_threads" "$n" "$calls" "$threads"; done
