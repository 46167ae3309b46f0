#!/usr/bin/env bash
# Ctrl-C in the middle of a grade (issue 33): the grade says it was stopped,
# exits 130, and leaves nothing behind: no scratch folder, no process of its
# own. The grade runs a submission that never returns, in a temporary folder
# of the test's own (TMPDIR), and gets SIGINT once its runner is under way.
#   tests/cli_stop_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
work=$(mktemp -d)
chmod 711 "$work"  # the sandbox's user must pass through to the scratch folders
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
mkdir "$work/tmp" && chmod 1777 "$work/tmp"
scratch() { find "$work/tmp" -mindepth 2 -maxdepth 2 -name 'grade-*' 2>/dev/null; }

TMPDIR=$work/tmp "$build/grader/grade" --root "$root" --build-dir "$build" exercise_sdpa --time-limit 60 \
  --submission "$root/tests/submissions/exercise_sdpa/hostile/infinite_loop.cpp" >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 1 300); do  # up to 30 s for the runner to start
  pgrep -f grader-runner -P "$(pgrep -d, -P "$pid" 2>/dev/null || echo 0)" >/dev/null 2>&1 && break
  [[ -n $(scratch) ]] && pgrep -P "$pid" >/dev/null && sleep 1 && break
  sleep 0.1
done
[[ -n $(scratch) ]] || fail "the grade made no scratch folder under TMPDIR (it said: $(cat "$work/err"))"
children=$(pgrep -d ' ' -P "$pid")
[[ -n $children ]] || fail "the grade had no child process to stop"
kill -INT "$pid"
wait "$pid"
status=$?
((status == 130)) || fail "exit status $status after Ctrl-C, not 130; it said: $(cat "$work/err")"
grep -q "stopped by Ctrl-C" "$work/err" || fail "the grade did not say it was stopped: $(cat "$work/err")"
[[ -z $(scratch) ]] || fail "scratch folders left behind: $(scratch)"
sleep 0.2
for child in $children; do
  kill -0 "$child" 2>/dev/null && fail "process $child of the grade still runs"
done
pgrep -f "infinite_loop" >/dev/null && fail "the submission still runs: $(pgrep -af infinite_loop)"
echo "PASSED: Ctrl-C said, exit 130, no scratch folder and no process left"
