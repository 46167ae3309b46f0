#!/usr/bin/env bash
# Runners forked from a zygote (grader/judge/zygote.h) grade exactly as freshly
# started ones: a batch of four files (a model solution, a wrong file, a crash,
# the untouched starter) gets the same verdict, checks, focus points, score and
# output either way, and each report says how its runner started. A zygote
# killed while its child runs is the grader's fault for that grade alone (never
# a learner verdict), and the next grade of the batch gets a new zygote.
#   tests/runner_zygote_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
unset GRADER_FRESH_RUNNERS
grade=("$build/grader/grade" --root "$root" --build-dir "$build")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
command -v python3 >/dev/null || { echo "SKIPPED: python3 is not installed (Debian: python3)"; exit 77; }
sdpa=$root/tests/submissions/exercise_sdpa
files=("$root/solutions/exercise_sdpa/sdpa.cpp" "$sdpa/wrong/mask_inverted.cpp" "$sdpa/hostile/segfault.cpp"
  "$root/exercises/exercise_sdpa/sdpa.cpp")
args=()
for file in "${files[@]}"; do args+=(--submission "$file"); done
"${grade[@]}" exercise_sdpa "${args[@]}" --jobs 2 --time-limit 5 --format json --color never >"$work/forked.json" 2>"$work/err"
GRADER_FRESH_RUNNERS=1 "${grade[@]}" exercise_sdpa "${args[@]}" --jobs 2 --time-limit 5 --format json --color never \
  >"$work/fresh.json" 2>>"$work/err"
python3 - "$work/forked.json" "$work/fresh.json" <<'PY' || fail "$(head -c 3000 "$work/err")"
import json, sys
forked, fresh = (json.load(open(path)) for path in sys.argv[1:3])
assert len(forked) == len(fresh) == 4, (len(forked), len(fresh))
for a, b in zip(forked, fresh):
    name = a["submission"].rsplit("/", 2)[-2:]
    assert a["submission"] == b["submission"]
    assert a["timing"]["runner_forked"] is True, (name, "forked", a["timing"])
    assert b["timing"]["runner_forked"] is False, (name, "fresh", b["timing"])
    for field in ("verdict", "summary", "checks", "focus_points", "score", "stdout", "stderr", "compiler_output"):
        assert a[field] == b[field], (name, field, a[field], b[field])
print("same reports:", ", ".join(r["verdict"] for r in forked))
PY

# The zygote killed while its child hangs: that grade is a grader error, the next one is graded.
"${grade[@]}" exercise_sdpa --submission "$sdpa/hostile/infinite_loop.cpp" \
  --submission "$root/solutions/exercise_sdpa/sdpa.cpp" --jobs 1 --time-limit 20 --case-time-limit 20 --format json --color never \
  >"$work/killed.json" 2>"$work/err" &
batch=$!
parent_of() { awk '/^PPid:/ {print $2}' "/proc/$1/status" 2>/dev/null; }  # (stat's fields shift with a name holding blanks)
descends_from_batch() {  # PID: whether this batch started it (other tests' zygotes run beside this one)
  local pid=$1
  while [[ -n $pid && $pid -gt 1 ]]; do
    [[ $pid == "$batch" ]] && return 0
    pid=$(parent_of "$pid")
  done
  return 1
}
# The batch's zygote once it has a child running: the grader-runner whose
# parent is not one (its children are).
zygote_with_child() {
  local pid parent
  for ((i = 0; i < 300; i++)); do
    sleep 0.1
    for pid in $(pgrep -x grader-runner); do
      parent=$(parent_of "$pid") || continue
      [[ $(cat "/proc/$parent/comm" 2>/dev/null) != grader-runner ]] && pgrep -x -P "$pid" grader-runner >/dev/null &&
        descends_from_batch "$pid" && { echo "$pid"; return 0; }
    done
  done
  return 1
}
zygote=$(zygote_with_child)
[[ -n $zygote ]] || { kill "$batch"; fail "no zygote with a running child was seen"; }
kill -9 "$zygote"
wait "$batch"
status=$?
((status == 3)) || fail "a batch with a grader fault exits 3, not $status: $(head -c 2000 "$work/err")"
python3 - "$work/killed.json" <<'PY' || fail "$(head -c 3000 "$work/killed.json")"
import json, sys
hung, solution = json.load(open(sys.argv[1]))
assert hung["verdict"] == "grader_error", hung
assert "zygote" in json.dumps(hung), hung
assert solution["verdict"] == "passed" and solution["timing"]["runner_forked"] is True, solution
PY
# A zygote stalled (stopped) past the ending's own limit while its child
# finishes: the child's exit, seen through its pidfd, ends the run; the wait
# status arrives once the zygote goes on. A stall is never the learner's timeout.
# The model solution made slow (a busy wait of 150 ms per call, no system
# call), so that its runner is surely seen running: the plain solution's run,
# a few tenths of a second, could end between two looks under load.
mkdir -p "$work/slow"
{
  echo '#include <chrono>'
  sed 's|^    const torch::Tensor& mask) {$|&\n  for (auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(150); std::chrono::steady_clock::now() < end;) {}|' \
    "$root/solutions/exercise_sdpa/sdpa.cpp"
} >"$work/slow/sdpa.cpp"
grep -q 'milliseconds(150)' "$work/slow/sdpa.cpp" || fail "the slow copy of the solution was not made"
"${grade[@]}" exercise_sdpa --submission "$work/slow/sdpa.cpp" --jobs 1 --no-cache \
  --format json --color never >"$work/stalled.json" 2>"$work/err" &
batch=$!
zygote=$(zygote_with_child) || { kill "$batch" 2>/dev/null; fail "no zygote with a running child was seen (stall)"; }
kill -STOP "$zygote"
sleep 7
kill -CONT "$zygote"
wait "$batch"
python3 - "$work/stalled.json" <<'PY' || fail "$(head -c 3000 "$work/stalled.json") $(head -c 1000 "$work/err")"
import json, sys
report = json.load(open(sys.argv[1]))
assert report["verdict"] == "passed" and report["timing"]["runner_forked"] is True, report["summary"]
PY
echo "PASSED: forked and fresh runners grade alike; a lost zygote is the grader's fault and is replaced; a stalled one is no timeout"
