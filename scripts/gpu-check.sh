#!/usr/bin/env bash
# gpu-check.sh: builds the grader against a CUDA LibTorch and runs the GPU
# subset on a machine with an NVIDIA GPU.
#
#   scripts/gpu-check.sh [build|test|speed|all]      (default: all; test includes speed)
#
# LibTorch comes from the pip-installed torch of `python3` (or Torch_DIR).
# The other dependencies come from Debian packages: installed ones, or, on a
# machine that cannot install them (no registry), the .deb files in
# GRADER_DEBS (default .deps/debs, filled on a Debian machine with
# `scripts/gpu-check.sh fetch-debs`), unpacked into .deps/root beside the tree.
#
# Environment: GPU_BUILD_DIR (default build-cuda), GPU_JOBS (default nproc),
# GPU_LOG_DIR (where logs are copied; default the build folder).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${GPU_BUILD_DIR:-$root/build-cuda}"
jobs="${GPU_JOBS:-$(nproc)}"
debs="${GRADER_DEBS:-$root/.deps/debs}"
prefix="$root/.deps/root"
logs="${GPU_LOG_DIR:-$build}"
stage="${1:-all}"
deb_packages=(libgtest-dev libgmock-dev googletest libcli11-dev libyaml-cpp-dev libyaml-cpp0.7 nlohmann-json3-dev
  libfmt-dev libfmt9 libssl-dev libssl3 libtinyxml2-dev libtinyxml2-9 libseccomp-dev libseccomp2 bubblewrap
  pkgconf pkgconf-bin libpkgconf3)

say() { printf 'gpu-check: %s\n' "$*" >&2; }

if [[ "$stage" == fetch-debs ]]; then
  mkdir -p "$debs"
  (cd "$debs" && apt-get download "${deb_packages[@]}")
  say "downloaded ${#deb_packages[@]} packages into $debs"
  exit 0
fi

facts() {
  say "machine: $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | sed 's/^/gpu-check: gpu: /' >&2
  else
    say "gpu: nvidia-smi not found"
  fi
  command -v nvcc >/dev/null && say "nvcc: $(nvcc --version | tail -1)" || say "nvcc: not found"
  say "c++: $(c++ --version | head -1)"
  say "cmake: $(cmake --version | head -1)"
}

# Debian packages unpacked beside the tree, those the machine lacks.
setup_prefix() {
  [[ -d "$debs" ]] || { say "dependencies: installed packages only (no $debs)"; return 0; }
  local unpacked=()
  mkdir -p "$prefix"
  for deb in "$debs"/*.deb; do
    local package
    package="$(dpkg-deb -f "$deb" Package)"
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" && continue
    if [[ ! -f "$prefix/.unpacked-$package" ]]; then
      dpkg-deb -x "$deb" "$prefix"
      touch "$prefix/.unpacked-$package"
    fi
    unpacked+=("$package")
  done
  if ((${#unpacked[@]} == 0)); then
    say "dependencies: installed Debian packages"
    return 0
  fi
  # pkg-config files name /usr: point them here.
  find "$prefix" -name '*.pc' -exec sed -i "s|^prefix=/usr\$|prefix=$prefix/usr|" {} +
  # Libraries the grader's programs load at run time, also inside the sandbox
  # (which shows /usr, not this folder), and bwrap where the grader looks for it.
  local libdir="$prefix/usr/lib/x86_64-linux-gnu"
  for lib in "$libdir"/lib*.so.*; do
    [[ -e "$lib" && ! -e "/usr/local/lib/$(basename "$lib")" ]] && cp -P "$lib" /usr/local/lib/
  done
  ldconfig
  if ! command -v bwrap >/dev/null && [[ -x "$prefix/usr/bin/bwrap" ]]; then install -m 755 "$prefix/usr/bin/bwrap" /usr/local/bin/bwrap; fi
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export PKG_CONFIG_PATH="$libdir/pkgconfig:/usr/lib/x86_64-linux-gnu/pkgconfig:/usr/share/pkgconfig"
  export PATH="$PATH:$prefix/usr/bin"
  say "dependencies: unpacked in $prefix: ${unpacked[*]}"
}

configure_and_build() {
  local torch_prefix
  if [[ -n "${Torch_DIR:-}" ]]; then
    torch_prefix="$Torch_DIR"
  else
    torch_prefix="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')"
    say "torch: $(python3 -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())')"
  fi
  export CMAKE_PREFIX_PATH="$torch_prefix${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  mkdir -p "$build" "$logs"
  if [[ ! -f "$build/build.ninja" ]]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo 2>&1 | tee "$logs/configure.log"
  fi
  if ! cmake --build "$build" --parallel "$jobs" -- -k 0 >"$logs/build.log" 2>&1; then
    grep -E -A3 "error|FAILED" "$logs/build.log" | head -150 >&2
    say "build failed: $logs/build.log"
    exit 1
  fi
  say "build done"
}

# The GPU subset: every model solution graded on the GPU must pass with its
# GPU checks run (gpu_verified), and every device-mistake submission of the
# corpus must
# fail there with that focus point missed: the wrong submissions whose label
# (NAME.expect.yaml) names device_placement among the missed focus points.
grade_json() {  # exercise file out [options]: the JSON report in out
  "$build/grader/grade" --root "$root" --build-dir "$build" "$1" --submission "$2" --device cuda --format json \
    "${@:4}" >"$3" 2>"$3.stderr" || true
}
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($1)" "$2" 2>/dev/null; }
run_gpu_subset() {
  local failures=0 rows=() jobs_list=()
  mkdir -p "$logs/reports"
  # Every grade at once (one GPU, many cores): solutions, then device mistakes.
  for solution in "$root"/solutions/*/*.cpp "$root"/solutions/*/*.cu; do
    [[ -f "$solution" ]] || continue
    local exercise
    exercise="$(basename "$(dirname "$solution")")"
    jobs_list+=("solution $exercise $solution $logs/reports/$exercise.solution.json")
  done
  for expect in $(grep -l "^missed:.*device_placement" "$root"/tests/submissions/*/wrong/*.expect.yaml); do
    local submission="${expect%.expect.yaml}.cpp" exercise
    exercise="$(basename "$(dirname "$(dirname "$expect")")")"
    jobs_list+=("wrong $exercise $submission $logs/reports/$exercise.$(basename "$submission" .cpp).json")
  done
  # Timing is the speed stage's, one grade at a time: not here, where grades share the GPU.
  for job in "${jobs_list[@]}"; do
    read -r kind exercise file out <<<"$job"
    grade_json "$exercise" "$file" "$out" --no-speed &
  done
  wait
  for job in "${jobs_list[@]}"; do
    read -r kind exercise file out <<<"$job"
    local verdict gpu missed
    verdict="$(field "r['verdict']" "$out" || echo grader_error)"
    gpu="$(field "r.get('gpu_verified')" "$out" || echo False)"
    missed="$(field "' '.join(f['id'] for f in r['focus_points'] if f['status']=='missed')" "$out" || true)"
    if [[ "$kind" == solution ]]; then
      if [[ "$verdict" == passed && "$gpu" == True ]]; then rows+=("PASS solution $exercise"); else
        rows+=("FAIL solution $exercise: verdict $verdict, gpu_verified $gpu, missed '$missed'"); failures=$((failures + 1)); fi
    else
      if [[ "$verdict" == failed && " $missed " == *" device_placement "* && "$gpu" == True ]]; then
        rows+=("PASS wrong $exercise/$(basename "$file"): missed $missed"); else
        rows+=("FAIL wrong $exercise/$(basename "$file"): verdict $verdict, missed '$missed', want device_placement"); failures=$((failures + 1)); fi
    fi
  done
  printf '%s\n' "${rows[@]}" | tee "$logs/gpu-subset.txt"
  say "GPU subset: ${#rows[@]} grades, $failures failed"
  ((failures == 0))
}

# The speed stage, one grade at a time so that nothing else shares the GPU:
# the model solutions of the timed exercises (`speed:` in exercise.yaml) must
# pass with an unflagged table, and the corpus files labelled
# `speed_suspicious: true` must be flagged. The tables go to speed.txt.
run_speed() {
  local failures=0 rows=()
  mkdir -p "$logs/reports"
  : >"$logs/speed.txt"
  local jobs_list=()
  for yaml in "$root"/exercises/*/exercise.yaml; do
    grep -q "^speed:" "$yaml" || continue
    local exercise
    exercise="$(basename "$(dirname "$yaml")")"
    for solution in "$root/solutions/$exercise"/*.cpp; do jobs_list+=("solution $exercise $solution"); done
  done
  for expect in $(grep -l "^speed_suspicious: true" "$root"/tests/submissions/*/*/*.expect.yaml); do
    local exercise
    exercise="$(basename "$(dirname "$(dirname "$expect")")")"
    jobs_list+=("suspicious $exercise ${expect%.expect.yaml}.cpp")
  done
  for job in "${jobs_list[@]}"; do
    read -r kind exercise file <<<"$job"
    local out="$logs/reports/$exercise.$(basename "$file" .cpp).speed.json"
    grade_json "$exercise" "$file" "$out"
    "$build/grader/grade" --root "$root" --build-dir "$build" "$exercise" --submission "$file" --device cuda \
      --color never >"$out.txt" 2>&1 || true
    { echo "== $exercise $(basename "$file") ($kind)"; sed -n '/^Speed on/,/yardsticks/p' "$out.txt"; } >>"$logs/speed.txt"
    local ran suspicious
    ran="$(field "r.get('speed', {}).get('ran')" "$out" || echo None)"
    suspicious="$(field "r.get('speed', {}).get('suspicious')" "$out" || echo None)"
    if [[ "$kind" == solution && "$ran" == True && "$suspicious" == False ]] ||
      [[ "$kind" == suspicious && "$ran" == True && "$suspicious" == True ]]; then
      rows+=("PASS speed $kind $exercise/$(basename "$file")")
    else
      rows+=("FAIL speed $kind $exercise/$(basename "$file"): ran $ran, suspicious $suspicious"); failures=$((failures + 1))
    fi
  done
  cat "$logs/speed.txt"
  printf '%s\n' "${rows[@]}" | tee "$logs/speed-subset.txt"
  say "speed: ${#rows[@]} grades, $failures failed"
  ((failures == 0))
}

facts
setup_prefix
case "$stage" in
  build) configure_and_build ;;
  test) run_gpu_subset && run_speed ;;
  speed) run_speed ;;
  all) configure_and_build && run_gpu_subset && run_speed ;;
  *) say "unknown stage '$stage' (build, test, speed, all, fetch-debs)"; exit 64 ;;
esac
