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
# The server, not a process it forked for a command (those keep its command line).
server_pid() { pgrep -o -f -- "--warm-server $work/warm"; }
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
descendants() {
  local child
  for child in $(pgrep -P "$1"); do echo "$child"; descendants "$child"; done
}
parent_of() { ps -o ppid= -p "$1" 2>/dev/null | tr -d ' '; }
alive() { [[ -d /proc/$1 && $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
# Runner processes under the server (by their program's name, not bwrap's
# command line): its zygotes (whose parent is no runner) and the runners they
# forked (whose parent is one).
is_runner() { [[ $(cat "/proc/$1/comm" 2>/dev/null) == grader-runner ]]; }
zygotes_of() {
  local p
  for p in $(descendants "$1"); do is_runner "$p" && ! is_runner "$(parent_of "$p")" && echo "$p"; done
}
forked_runners_of() {
  local p
  for p in $(descendants "$1"); do is_runner "$p" && is_runner "$(parent_of "$p")" && echo "$p"; done
}
# The report without the lines that time it.
untimed() { grep -v -e ' s from your command' -e '^compile [0-9.]* s' -e 'the machine was busy' "$1"; }

# 1. The same report, status and files, handed over (GRADE_WARM=required: a
# command no server took fails) or not: a passing file, a failing one, a
# usage error. The first command starts the server.
sub=$root/tests/submissions/exercise_sdpa
solution=$root/solutions/exercise_sdpa/sdpa.cpp
# Where no server can serve (a CUDA LibTorch), the test is skipped, not failed.
client exercise_sdpa --submission "$solution" >/dev/null 2>&1
if [[ -f $work/warm/unavailable ]]; then
  echo "SKIPPED: no warm grader here: $(cat "$work/warm/unavailable")"
  exit 77
fi
for case in "exercise_sdpa --submission $solution" \
  "exercise_sdpa --submission $(ls "$sub"/wrong/*.cpp | head -1)" "exercise_sdpa --no-such-option"; do
  # shellcheck disable=SC2086
  GRADE_WARM=required client $case --color never --output "json=$work/warm.json" >"$work/warm.out" 2>"$work/warm.err"
  warm_status=$?
  # shellcheck disable=SC2086
  fresh $case --color never --output "json=$work/fresh.json" >"$work/fresh.out" 2>"$work/fresh.err"
  fresh_status=$?
  ((warm_status == fresh_status)) || fail "'$case': exit $warm_status handed over, $fresh_status fresh: $(cat "$work/warm.err")"
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
if [[ -z $pid && -f $work/warm/unavailable ]]; then
  echo "SKIPPED: no warm grader here: $(cat "$work/warm/unavailable")"
  exit 77
fi
[[ -n $pid ]] || fail "no warm grader started"
[[ $(stat -c %a "$work/warm") == 700 ]] || fail "the server's folder is mode $(stat -c %a "$work/warm"), not 700"
client exercise_sdpa --submission "$solution" --profile >/dev/null 2>"$work/err"
grep -q "hand the command to the warm grader" "$work/err" || fail "the second command was not handed over: $(cat "$work/err")"
# The umask is the command's: a report file gets the mode it would.
(umask 077 && GRADE_WARM=required client exercise_sdpa --submission "$solution" --output "json=$work/private.json" >/dev/null 2>&1)
[[ $(stat -c %a "$work/private.json") == 600 ]] || fail "a report written under umask 077 is mode $(stat -c %a "$work/private.json")"

# 2. Two commands at once, each its own.
GRADE_WARM=required client exercise_sdpa --submission "$solution" --color never >"$work/a.out" 2>&1 &
a=$!
GRADE_WARM=required client exercise_sdpa --submission "$(ls "$sub"/wrong/*.cpp | head -1)" --color never >"$work/b.out" 2>&1 &
b=$!
wait "$a"
a_status=$?
wait "$b"
b_status=$?
((a_status == 0 && b_status == 1)) || fail "two commands at once ended $a_status and $b_status, not 0 and 1"
grep -q "Verdict: passed" "$work/a.out" && grep -q "Verdict: failed" "$work/b.out" || fail "two commands at once mixed their reports"

# 3. Ctrl-C to the command: said, 130, no scratch folder, no runner of the
# command left; the server's zygotes and the server live on and serve. Then a
# client killed outright: its command is stopped too.
scratch() { find "$work/tmp" -mindepth 2 -maxdepth 2 -name 'grade-*' 2>/dev/null; }
zygotes=$(zygotes_of "$pid" | sort | tr '\n' ' ')
if [[ -z ${zygotes// /} ]]; then
  echo "SKIPPED (the rest): the server keeps no zygote here (runners start fresh without seccomp: docs/sandbox.md)"
  exit 77
fi
stop_test() {  # SIGNAL: sent to the client of an endless grade
  client_exec exercise_sdpa --time-limit 60 --case-time-limit 60 --submission "$sub/hostile/infinite_loop.cpp" >"$work/out" 2>"$work/err" &
  cpid=$!
  for _ in $(seq 1 300); do
    [[ -n $(forked_runners_of "$pid") ]] && sleep 1 && break
    sleep 0.1
  done
  [[ -n $(forked_runners_of "$pid") ]] || fail "no runner ran the endless grade: $(cat "$work/err")"
  kill "-$1" "$cpid"
  { wait "$cpid"; } 2>/dev/null
  status=$?
  for _ in $(seq 1 100); do [[ -z $(forked_runners_of "$pid") && -z $(scratch) ]] && break; sleep 0.1; done
  [[ -z $(forked_runners_of "$pid") ]] || fail "after SIG$1 a runner still runs: $(forked_runners_of "$pid")"
  [[ -z $(scratch) ]] || fail "after SIG$1 scratch folders are left: $(scratch)"
  [[ $(server_pid) == "$pid" ]] || fail "the server ended with the command stopped by SIG$1"
  for z in $zygotes; do alive "$z" || fail "zygote $z ended with the command stopped by SIG$1"; done
}
stop_test INT
((status == 130)) || fail "exit status $status after Ctrl-C, not 130; it said: $(cat "$work/err")"
grep -q "stopped by Ctrl-C" "$work/err" || fail "the grade did not say it was stopped: $(cat "$work/err")"
[[ ! -s $work/out ]] || fail "a stopped grade printed a report: $(head -c 300 "$work/out")"
stop_test KILL
GRADE_WARM=required client exercise_sdpa --submission "$solution" >/dev/null 2>&1 ||
  fail "the command after the stopped ones did not pass"

# 4. A rebuilt grader (its program file written again) is not served by the
# old server: the command runs fresh, and the old server ends.
cp -p "$build/grader/grade" "$work/grade.bak"
touch "$build/grader/grade"
client exercise_sdpa --submission "$solution" --profile >/dev/null 2>"$work/err"
status=$?
touch -r "$work/grade.bak" "$build/grader/grade"
((status == 0)) || fail "the command after a rebuild failed: $(cat "$work/err")"
grep -q "start the grader (loading LibTorch" "$work/err" || fail "a stale server took the command: $(cat "$work/err")"
for _ in $(seq 1 150); do alive "$pid" || break; sleep 0.1; done
alive "$pid" && fail "the stale server $pid did not end within 15 s"

# 5. Idle, it ends and removes its socket; with its socket gone, it ends.
GRADE_WARM_IDLE=2 client exercise_sdpa --submission "$solution" >/dev/null 2>&1
pid=$(server_pid)
[[ -n $pid ]] || fail "no server started after the stale one"
for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
alive "$pid" && fail "the idle server did not end within 10 s"
[[ -e $work/warm/socket ]] && fail "the idle server left its socket"
client exercise_sdpa --submission "$solution" >/dev/null 2>&1
pid=$(server_pid)
rm -f "$work/warm/socket"
for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
alive "$pid" && fail "the server did not end when its socket was removed"

# 6. A server that cannot serve here says so once: the next clients start none.
echo "a test says so" >"$work/warm/unavailable"
client exercise_sdpa --submission "$solution" >/dev/null 2>&1 || fail "a grade with the server unavailable failed"
[[ -z $(server_pid) ]] || fail "a server was started where one said it cannot serve"
rm -f "$work/warm/unavailable"

# 7. GRADE_WARM=off: no server.
rm -rf "$work/warm"
GRADE_WARM=off client exercise_sdpa --submission "$solution" >/dev/null 2>&1 || fail "GRADE_WARM=off did not grade"
[[ -z $(server_pid) && ! -e $work/warm/socket ]] || fail "GRADE_WARM=off started a server"
echo "PASSED: the same reports handed over, umask, two at once; Ctrl-C and SIGKILL; stale, idle, orphaned and unavailable servers; GRADE_WARM=off"
