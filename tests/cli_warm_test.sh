#!/usr/bin/env bash
# The warm grader (issue 52; grader/warm/server.h): a command handed to it
# gets the report, exit status and files it would get from the grader
# started fresh; its Ctrl-C stops the grade as it would and leaves nothing
# behind; a rebuilt grader is never served by the old one; the server is
# its user's alone, and ends when idle or when its socket is gone. The test
# has a server of its own (GRADE_WARM_DIR), not the build folder's.
#   tests/cli_warm_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
work=$(mktemp -d)
chmod 711 "$work"  # the sandbox's user must pass through to the scratch folders
fail() { echo "FAILED: $*"; exit 1; }
mkdir "$work/tmp" && chmod 1777 "$work/tmp"
export GRADE_WARM_DIR=$work/warm GRADE_WARM_IDLE=30 TMPDIR=$work/tmp
server_pid() { pgrep -f -- "--warm-server $work/warm" | head -1; }
cleanup() {
  local pid
  pid=$(server_pid)
  [[ -n $pid ]] && kill "$pid"
  rm -rf "$work"
}
trap cleanup EXIT
# As the grade script runs it: the command's start, and the hand-over's,
# exported by the process that becomes the client (in the background too:
# `client_exec ... &` is the client's own pid).
client_exec() {
  export GRADE_STARTED=${EPOCHREALTIME/,/.} GRADE_STARTED_PID=$BASHPID GRADE_EXECED=${EPOCHREALTIME/,/.}
  exec "$build/grader/grader-client" "$build" "$build/grader/grade" --root "$root" --build-dir "$build" "$@"
}
client() { (client_exec "$@"); }
fresh() { "$build/grader/grade" --root "$root" --build-dir "$build" "$@"; }
# The report without the lines that time it.
untimed() { grep -v -e ' s from your command' -e '^compile [0-9.]* s' -e 'the machine was busy' "$1"; }

# 1. The same report, status and files, handed over or not: a passing file, a
# failing one, a usage error. The first command starts the server.
sub=$root/tests/submissions/exercise_sdpa
for case in "exercise_sdpa --submission $root/solutions/exercise_sdpa/sdpa.cpp" \
  "exercise_sdpa --submission $(ls "$sub"/wrong/*.cpp | head -1)" "exercise_sdpa --no-such-option"; do
  # shellcheck disable=SC2086
  client $case --color never --output "json=$work/warm.json" >"$work/warm.out" 2>"$work/warm.err"
  warm_status=$?
  # shellcheck disable=SC2086
  fresh $case --color never --output "json=$work/fresh.json" >"$work/fresh.out" 2>"$work/fresh.err"
  fresh_status=$?
  ((warm_status == fresh_status)) || fail "'$case': exit $warm_status handed over, $fresh_status fresh"
  diff <(untimed "$work/warm.out") <(untimed "$work/fresh.out") >/dev/null ||
    fail "'$case': the reports differ: $(diff <(untimed "$work/warm.out") <(untimed "$work/fresh.out") | head -5)"
  diff <(grep -v '^grade: notice' "$work/warm.err") <(grep -v '^grade: notice' "$work/fresh.err") >/dev/null ||
    fail "'$case': standard error differs: $(diff "$work/warm.err" "$work/fresh.err" | head -5)"
  if [[ -f $work/fresh.json ]]; then
    python3 - "$work/warm.json" "$work/fresh.json" <<'EOF' || fail "'$case': the JSON files differ"
import json, sys
def drop(report):
    report.pop("timing", None)
    return report
a, b = (drop(json.load(open(p))) for p in sys.argv[1:])
sys.exit(0 if a == b else 1)
EOF
  fi
  rm -f "$work"/*.json
done
pid=$(server_pid)
[[ -n $pid ]] || fail "no warm grader started"
[[ $(stat -c %a "$work/warm") == 700 ]] || fail "the server's folder is mode $(stat -c %a "$work/warm"), not 700"
client exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" --profile >/dev/null 2>"$work/err"
grep -q "hand the command to the warm grader" "$work/err" || fail "the second command was not handed over: $(cat "$work/err")"

# 2. Ctrl-C to the command: said, 130, no scratch folder, no process of the
# command left; the server serves the next command.
descendants() {
  local child
  for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done
}
scratch() { find "$work/tmp" -mindepth 2 -maxdepth 2 -name 'grade-*' 2>/dev/null; }
client_exec exercise_sdpa --time-limit 60 --case-time-limit 60 --submission "$sub/hostile/infinite_loop.cpp" >"$work/out" 2>"$work/err" &
cpid=$!
for _ in $(seq 1 300); do
  [[ -n $(scratch) ]] && [[ -n $(descendants "$pid") ]] && sleep 1.5 && break
  sleep 0.1
done
command_processes=$(descendants "$pid" | tr '\n' ' ')
[[ -n ${command_processes// /} ]] || fail "the server ran no process for the command"
kill -INT "$cpid"
wait "$cpid"
status=$?
((status == 130)) || fail "exit status $status after Ctrl-C, not 130; it said: $(cat "$work/err")"
grep -q "stopped by Ctrl-C" "$work/err" || fail "the grade did not say it was stopped: $(cat "$work/err")"
[[ ! -s $work/out ]] || fail "a stopped grade printed a report: $(head -c 300 "$work/out")"
for _ in $(seq 1 50); do [[ -z $(scratch) ]] && break; sleep 0.1; done
[[ -z $(scratch) ]] || fail "scratch folders left behind: $(scratch)"
for p in $command_processes; do
  for _ in $(seq 1 30); do [[ -d /proc/$p ]] && [[ $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]] || break; sleep 0.1; done
  # The zygote is the server's, not the command's: it stays.
  { tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null | grep -q -- "--zygote" && continue
  [[ -d /proc/$p && $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]] &&
    fail "process $p of the stopped command still runs: $({ tr '\0' ' ' <"/proc/$p/cmdline"; } 2>/dev/null)"
done
[[ $(server_pid) == "$pid" ]] || fail "the server ended with the stopped command"
client exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" >/dev/null 2>&1 ||
  fail "the command after a stopped one did not pass"

# 3. A rebuilt grader (its program file written again) is not served by the
# old server: the command runs fresh, and the old server ends.
cp -p "$build/grader/grade" "$work/grade.bak"
touch "$build/grader/grade"
client exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" --profile >/dev/null 2>"$work/err"
status=$?
touch -r "$work/grade.bak" "$build/grader/grade"
((status == 0)) || fail "the command after a rebuild failed: $(cat "$work/err")"
grep -q "start the grader (loading LibTorch" "$work/err" || fail "a stale server took the command: $(cat "$work/err")"
for _ in $(seq 1 50); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
[[ -d /proc/$pid ]] && fail "the stale server $pid did not end"

# 4. Idle, it ends and removes its socket; with its socket gone, it ends.
GRADE_WARM_IDLE=2 client exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" >/dev/null 2>&1
pid=$(server_pid)
[[ -n $pid ]] || fail "no server started after the stale one"
for _ in $(seq 1 80); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
[[ -d /proc/$pid ]] && fail "the idle server did not end within 8 s"
[[ -e $work/warm/socket ]] && fail "the idle server left its socket"
client exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" >/dev/null 2>&1
pid=$(server_pid)
rm -f "$work/warm/socket"
for _ in $(seq 1 50); do [[ -d /proc/$pid ]] || break; sleep 0.1; done
[[ -d /proc/$pid ]] && fail "the server did not end when its socket was removed"

# 5. GRADE_WARM=off: no server.
rm -rf "$work/warm"
GRADE_WARM=off client exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" >/dev/null 2>&1 ||
  fail "GRADE_WARM=off did not grade"
[[ -z $(server_pid) && ! -e $work/warm/socket ]] || fail "GRADE_WARM=off started a server"
echo "PASSED: the same reports handed over; Ctrl-C; stale, idle and orphaned servers end; GRADE_WARM=off"
