#!/usr/bin/env bash
# Concurrent grades in one build folder (issue 29): builds are serialised by a
# lock, a grade that waits says so, and then uses what the other built.
#   1. The lock held by another build: a grade says it waits, then grades.
#   2. The build made stale (one of the grader's outputs and the stamps
#      removed), three grades of different exercises at once: one build, an
#      intact ninja state, every verdict as labelled.
# Runs ./grade itself (the script that builds), alone (RUN_SERIAL).
#   tests/build_lock_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
export GRADE_BUILD_DIR=$build
command -v python3 >/dev/null || { echo "SKIPPED: python3 is not installed (it reads the reports)"; exit 77; }
command -v flock >/dev/null || { echo "SKIPPED: flock is not installed (Debian: util-linux)"; exit 77; }
work=$(mktemp -d)
holder=
trap '[[ -n $holder ]] && kill "$holder" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; for f in "$work"/*.err; do [[ -f $f ]] && { echo "--- $f"; tail -15 "$f"; }; done; exit 1; }

# verdict FILE.json VERDICT [MISSED...]: the report's verdict and exact missed set.
verdict() {
  python3 - "$@" <<'PY' || return 1
import json, sys
report = json.load(open(sys.argv[1]))
want_verdict, want_missed = sys.argv[2], sorted(sys.argv[3:])
missed = sorted(p["id"] for p in report["focus_points"] if p["status"] == "missed")
if report["verdict"] != want_verdict or missed != want_missed:
    sys.exit(f"{sys.argv[1]}: verdict {report['verdict']}, missed {missed}; "
             f"want {want_verdict}, missed {want_missed}")
PY
}
stale() { rm -f "$build/grader/grader-precompile" "$build"/.grade-fresh*; }
intact() {
  local said
  said=$(ninja -C "$build" -t recompact 2>&1) || fail "ninja cannot read its state: $said"
  [[ $said != *premature* && $said != *recovering* ]] || fail "ninja's log was damaged: $said"
  said=$(ninja -C "$build" grader-tools 2>&1)
  [[ $said == *"no work to do"* ]] || fail "the build was not complete after the grades: $said"
}

echo "== 1. a grade waits for the build that holds the lock"
stale
flock "$build/.grade-build.lock" sleep 4 &
holder=$!
sleep 0.5
"$root/grade" exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" --format json \
  >"$work/wait.json" 2>"$work/wait.err"
grep -q "waiting for another build" "$work/wait.err" || fail "the waiting grade did not say it waits"
verdict "$work/wait.json" passed || fail "the grade after the wait"
wait "$holder"
holder=
intact

echo "== 2. three grades of different exercises at once, on a stale build"
stale
subs=$root/tests/submissions
"$root/grade" exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" --format json \
  >"$work/sdpa.json" 2>"$work/sdpa.err" &
"$root/grade" exercise_mha --submission "$subs/exercise_mha/wrong/detached_attention_weights.cpp" --format json \
  >"$work/mha.json" 2>"$work/mha.err" &
"$root/grade" exercise_causal_attention --submission "$root/solutions/exercise_causal_attention/causal_attention.cpp" \
  --format json >"$work/causal.json" 2>"$work/causal.err" &
wait
builds=$(cat "$work"/sdpa.err "$work"/mha.err "$work"/causal.err | grep -c "grade: building")
[[ $builds == 1 ]] || fail "$builds builds ran (one expected)"
if grep -q "interrupted\|premature\|recovering" "$work"/*.err; then fail "a build was interrupted or damaged"; fi
verdict "$work/sdpa.json" passed || fail "exercise_sdpa"
verdict "$work/mha.json" failed gradients || fail "exercise_mha"
verdict "$work/causal.json" passed || fail "exercise_causal_attention"
intact
echo "PASSED"
