#!/usr/bin/env bash
# A class graded on a real Slurm: starts a one-node cluster of its own (munged,
# slurmctld, slurmd, with private sockets, ports and state in a temporary
# folder: scripts/slurm/local-cluster.sh), grades a class folder of corpus submissions with
# scripts/slurm/submit-class.sh as a 2-task job array plus the merge job, and
# checks that the merged gradebook says, for every student and exercise, what
# a single grade of the same file says. Prints the throughput (submissions per
# minute on this one node).
#
#   tests/slurm_test.sh ROOT BUILD
#
# Exit 77 (CTest: skipped, with the reason printed) where Slurm or munge is
# not installed or cannot start here; never a pass. The cluster is
# scripts/slurm/local-cluster.sh's.
set -uo pipefail
root=${1:?root} build=${2:?build}
grade=("$build/grader/grade" --root "$root" --build-dir "$build")

skip() {
  echo "SKIPPED: $*"
  exit 77
}
fail() {
  echo "FAILED: $*"
  exit 1
}

work=$(mktemp -d /tmp/grade-slurm-test.XXXXXX)
cleanup() {
  bash "$root/scripts/slurm/local-cluster.sh" stop "$work/cluster"
  rm -rf "$work"
}
trap cleanup EXIT
chmod 711 "$work"
cluster=$(bash "$root/scripts/slurm/local-cluster.sh" start "$work/cluster" 2>"$work/cluster.err")
status=$?
cat "$work/cluster.err"
((status == 77)) && skip "$(tail -1 "$work/cluster.err" | sed 's/^local-cluster: //')"
((status == 0)) || fail "local-cluster.sh start exited $status"
eval "$cluster"

# The class: six students, each exercise's file where a learner puts it
# (straight in the student's folder, or in a clone of the learner repository).
subs=$root/tests/submissions
class=$work/class
put() { mkdir -p "$(dirname "$class/$2")" && cp "$1" "$class/$2"; }
put "$root/solutions/exercise_sdpa/sdpa.cpp" ann/sdpa.cpp
put "$root/solutions/exercise_mhsa/mhsa.cpp" ann/mhsa.cpp
put "$root/solutions/exercise_mha/mha.cpp" ann/mha.cpp
put "$subs/exercise_sdpa/wrong/inputs_cast_to_float32.cpp" bob/sdpa.cpp
put "$subs/exercise_mhsa/accepted/einsum.cpp" bob/mhsa.cpp
put "$subs/exercise_mha/wrong/key_from_query_input.cpp" cid/exercises/exercise_mha/mha.cpp
put "$subs/exercise_sdpa/accepted/matmul_div_sqrt.cpp" cid/exercises/exercise_sdpa/sdpa.cpp
put "$subs/exercise_sdpa/hostile/aborts.cpp" dee/sdpa.cpp
put "$subs/exercise_mhsa/wrong/dropout_always_on.cpp" dee/mhsa.cpp
mkdir -p "$class/eve"  # nothing handed in
put "$subs/exercise_mha/accepted/einsum_fill_minus_1e9.cpp" fay/mha.cpp
put "$root/exercises/exercise_sdpa/sdpa.cpp" fay/sdpa.cpp  # the untouched starter

# A gradebook folder with a non-ASCII name, submitted under LC_ALL=C: no
# shell may re-read it (bash's printf %q quoting, run by dash, once made a
# folder named '$' in the checkout).
results=$work/results gradebook=$work/gradebook-é
before=$(cd "$root" && ls -A)
start=$(date +%s.%N)
LC_ALL=C GRADE_BUILD_DIR=$build bash "$root/scripts/slurm/submit-class.sh" --shards 2 --cpus-per-task 1 \
  "$class" "$results" "$gradebook" -- --sandbox auto || fail "submit-class.sh failed"
# Wait for both jobs (array and merge) to leave the queue.
for _ in $(seq 1200); do
  [[ -z $(squeue -h -o %i 2>/dev/null) ]] && break
  sleep 0.5
done
end=$(date +%s.%N)
[[ -z $(squeue -h -o %i) ]] || fail "jobs still queued after 10 minutes: $(squeue)"
merge_out=$(cat "$gradebook"/merge-*.out 2>/dev/null)
[[ $(cd "$root" && ls -A) == "$before" ]] || fail "the submission left something in the checkout: $(cd "$root" && ls -A)"
echo "$merge_out"
[[ -f $gradebook/gradebook.csv ]] || fail "no gradebook; task output: $(cat "$results"/.logs/* 2>/dev/null | tail -20)"
grep -q '^incomplete' <<<"$merge_out" && fail "the merge says the gradebook is incomplete"
ls "$results/.shards/shard-1-of-2.json" "$results/.shards/shard-2-of-2.json" >/dev/null || fail "a shard left no manifest"
cat "$gradebook/gradebook.csv"

# Every cell against a single grade of the same file on the same inputs
# (verdict and missed focus points).
python3 - "$class" "$gradebook" "${grade[@]}" <<'PY' || fail "the gradebook disagrees with single grades"
import csv, json, os, subprocess, sys
klass, gradebook, grade = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = {row["student"]: row for row in csv.DictReader(open(os.path.join(gradebook, "gradebook.csv"), newline=""))}
files = {"exercise_sdpa": "sdpa.cpp", "exercise_mhsa": "mhsa.cpp", "exercise_mha": "mha.cpp"}
bad = 0
for student in sorted(os.listdir(klass)):
    row = rows.get(student)
    if row is None:
        print(f"{student}: no row in the gradebook"); bad += 1; continue
    per_student = json.load(open(os.path.join(gradebook, "students", student + ".json")))
    for exercise, name in files.items():
        candidates = [os.path.join(klass, student, name), os.path.join(klass, student, "exercises", exercise, name)]
        found = [c for c in candidates if os.path.exists(c)]
        verdict, missed = row[f"{exercise} verdict"], row[f"{exercise} missed focus points"]
        if not found:
            expected, expected_missed = "no_submission", ""
        else:
            # The same random inputs as the class grade: its seed is in the student's JSON.
            seed = str(per_student["exercises"][exercise]["seed"])
            out = subprocess.run(grade + [exercise, "--submission", found[0], "--format", "json", "--seed", seed],
                                 capture_output=True, text=True)
            single = json.loads(out.stdout)
            expected = single["verdict"]
            expected_missed = ";".join(f["id"] for f in single["focus_points"] if f["status"] == "missed")
        same = verdict == expected and missed == expected_missed
        same = same and per_student["exercises"][exercise]["verdict"] == expected
        print(f"{'ok ' if same else 'BAD'} {student:4} {exercise:14} gradebook {verdict}/{missed or '-'}"
              f"  single grade {expected}/{expected_missed or '-'}")
        bad += not same
sys.exit(1 if bad else 0)
PY

graded=$(find "$class" -name '*.cpp' | wc -l)
python3 -c 'import sys; n, s = int(sys.argv[1]), float(sys.argv[3]) - float(sys.argv[2]); print(f"throughput: {n} submissions in {s:.1f} s on 1 node (2 array tasks of 1 CPU; queueing and merge included): {60 * n / s:.1f} per minute")' \
  "$graded" "$start" "$end"
echo "PASSED"
