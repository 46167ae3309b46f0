#!/usr/bin/env bash
# The Kubernetes templates (templates/kubernetes/): kubectl's client-side dry
# run where a cluster answers (kubectl needs one even for that; without one it
# is reported as not assessed, never as passed); the Indexed Job's shard count
# against its completions; and, for real, each pod's command run here with the
# variables Kubernetes gives it (JOB_COMPLETION_INDEX), then the merge job's
# command, which must report a complete gradebook.
#
#   tests/kubernetes_test.sh ROOT BUILD
#
# Exit 77 (skipped, reason printed) without kubectl or python3 to read YAML.
set -uo pipefail
root=${1:?root} build=${2:?build}
dir=$root/templates/kubernetes
fail() {
  echo "FAILED: $*"
  exit 1
}

command -v python3 >/dev/null || { echo "SKIPPED: python3 is needed to read the manifests"; exit 77; }
work=$(mktemp -d /tmp/grade-k8s-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

# YAML -> JSON: kubectl parses it offline (`--local`), else python3's yaml.
to_json() {
  if command -v kubectl >/dev/null; then
    kubectl label --local -f "$1" checked=yes --dry-run=client -o json
  else
    python3 -c 'import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))' "$1"
  fi
}
for name in grade-class-job merge-job; do
  to_json "$dir/$name.yaml" >"$work/$name.json" 2>"$work/err" || {
    echo "SKIPPED: cannot read $name.yaml without kubectl or python3-yaml: $(head -1 "$work/err")"
    exit 77
  }
done

if command -v kubectl >/dev/null; then
  for name in grade-class-job merge-job; do
    if out=$(kubectl create --dry-run=client -f "$dir/$name.yaml" 2>&1); then
      echo "kubectl dry run: $out"
    elif grep -qE "connection refused|unable to recognize|failed to download openapi|no configuration" <<<"$out"; then
      echo "kubectl dry run of $name.yaml: not assessed (no cluster answers here: $(head -1 <<<"$out" | cut -c1-160))"
    else
      fail "kubectl refuses $name.yaml: $out"
    fi
  done
else
  echo "kubectl dry run: not assessed (kubectl is not installed)"
fi

# The manifests' fields, and each pod's command as a list of arguments.
python3 - "$work" <<'PY' || fail "the manifests are inconsistent"
import json, sys
work = sys.argv[1]
job = json.load(open(f"{work}/grade-class-job.json"))
merge = json.load(open(f"{work}/merge-job.json"))
problems = []
def expect(cond, what):
    if not cond: problems.append(what)
for manifest in (job, merge):
    expect(manifest["apiVersion"] == "batch/v1" and manifest["kind"] == "Job", "a batch/v1 Job")
    expect(manifest["spec"]["template"]["spec"]["restartPolicy"] == "Never", "restartPolicy Never")
spec = job["spec"]
expect(spec.get("completionMode") == "Indexed", "an Indexed Job")
container = spec["template"]["spec"]["containers"][0]
env = {e["name"]: e.get("value") for e in container.get("env", [])}
expect(env.get("GRADE_SHARD_COUNT") == str(spec["completions"]),
       f"GRADE_SHARD_COUNT ({env.get('GRADE_SHARD_COUNT')}) equals completions ({spec['completions']})")
command = container["command"]
expect(command[command.index("--shard") + 1] == "auto", "--shard auto")
claims = lambda m: {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in m["spec"]["template"]["spec"]["volumes"]}
expect(claims(job)["results"] == claims(merge)["results"], "the merge reads the volume the shards write")
expect(container["image"] == merge["spec"]["template"]["spec"]["containers"][0]["image"], "one image")
for p in problems: print("expected:", p)
open(f"{work}/shards", "w").write(str(spec["completions"]))
open(f"{work}/grade.args", "w").write("\n".join(command))
open(f"{work}/merge.args", "w").write("\n".join(merge["spec"]["template"]["spec"]["containers"][0]["command"]))
sys.exit(1 if problems else 0)
PY
# The image is built from the checkout: its build folder (gigabytes, built
# for another machine) and history stay out of the context.
for pattern in build/ .git/; do
  grep -qxF "$pattern" "$root/.dockerignore" || fail ".dockerignore does not leave out $pattern"
done
echo "manifests: an Indexed Job of $(cat "$work/shards") shards, GRADE_SHARD_COUNT equal, results volume shared with the merge"

# Each pod's command, here: the image's paths mapped onto this checkout.
mkdir -p "$work/class/ann" "$work/class/bob/exercises/exercise_mhsa" "$work/results"
cp "$root/solutions/exercise_sdpa/sdpa.cpp" "$work/class/ann/sdpa.cpp"
cp "$root/exercises/exercise_mhsa/mhsa.cpp" "$work/class/bob/exercises/exercise_mhsa/mhsa.cpp"
sandbox=strict
"$build/grader/grade" --root "$root" --build-dir "$build" sandbox >/dev/null 2>&1 || sandbox=auto
map() {
  local arg
  while IFS= read -r arg || [[ -n $arg ]]; do
    case $arg in
      /grader/build*) arg=$build${arg#/grader/build} ;;
      /grader*) arg=$root${arg#/grader} ;;
      /class*) arg=$work/class${arg#/class} ;;
      /results*) arg=$work/results${arg#/results} ;;
      strict) arg=$sandbox ;;
    esac
    printf '%s\n' "$arg"
  done <"$1"
}
mapfile -t grade_cmd < <(map "$work/grade.args")
mapfile -t merge_cmd < <(map "$work/merge.args")
shards=$(cat "$work/shards")
for ((index = 0; index < shards; index++)); do
  JOB_COMPLETION_INDEX=$index GRADE_SHARD_COUNT=$shards "${grade_cmd[@]}" >"$work/pod-$index.out" 2>&1
  status=$?
  ((status == 0)) || fail "pod $index exited $status (a pod whose grading ran succeeds, failing students or not): $(tail -5 "$work/pod-$index.out")"
  grep -q "shard $((index + 1))/$shards (from JOB_COMPLETION_INDEX)" "$work/pod-$index.out" ||
    fail "pod $index did not take its shard from JOB_COMPLETION_INDEX: $(head -3 "$work/pod-$index.out")"
done
"${merge_cmd[@]}" >"$work/merge.out" 2>&1 || fail "the merge pod exited $?: $(cat "$work/merge.out")"
cat "$work/merge.out"
csv=$work/results/gradebook/gradebook.csv
grep -q '^ann,' "$csv" && grep -q '^bob,' "$csv" || fail "the gradebook lacks a student: $(cat "$csv")"
grep -q 'exercise_sdpa' "$csv" || fail "no exercise_sdpa column"
cut -d, -f1-3 "$csv"
echo "PASSED: $shards pods (sandbox $sandbox) and the merge, as the manifests run them"
