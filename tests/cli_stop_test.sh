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
descendants() {  # PID: its children, theirs, and so on
  local child
  for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done
}
runs_runner() {  # PID...: whether one of them is the grader's runner
  local p
  for p in "$@"; do tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q grader-runner && return 0; done
  return 1
}
scratch() { find "$work/tmp" -mindepth 2 -maxdepth 2 -name 'grade-*' 2>/dev/null; }

TMPDIR=$work/tmp "$build/grader/grade" --root "$root" --build-dir "$build" exercise_sdpa --time-limit 60 \
  --submission "$root/tests/submissions/exercise_sdpa/hostile/infinite_loop.cpp" >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 1 300); do  # up to 30 s for the runner to be at the endless loop
  [[ -n $(scratch) ]] && runs_runner $(descendants "$pid") && sleep 1 && break
  sleep 0.1
done
[[ -n $(scratch) ]] || fail "the grade made no scratch folder under TMPDIR (it said: $(cat "$work/err"))"
children=$(descendants "$pid" | tr '\n' ' ')
[[ -n ${children// /} ]] || fail "the grade had no child process to stop"
runs_runner $children || fail "no runner among the grade's processes: $children"
kill -INT "$pid"
wait "$pid"
status=$?
((status == 130)) || fail "exit status $status after Ctrl-C, not 130; it said: $(cat "$work/err")"
grep -q "stopped by Ctrl-C" "$work/err" || fail "the grade did not say it was stopped: $(cat "$work/err")"
[[ ! -s $work/out ]] || fail "a stopped grade printed a report: $(head -c 300 "$work/out")"
[[ -z $(scratch) ]] || fail "scratch folders left behind: $(scratch)"
running() {  # PID: alive and not a zombie (an ended child whose new parent has not reaped it yet)
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [[ -n $state && $state != Z ]]
}
for child in $children; do
  for _ in $(seq 1 20); do running "$child" || break; sleep 0.1; done
  running "$child" && fail "process $child of the grade still runs: $(cat "/proc/$child/cmdline" | tr '\0' ' ')"
done
echo "PASSED: Ctrl-C said, exit 130, no scratch folder and no process left"
