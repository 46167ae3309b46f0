#!/usr/bin/env bash
# The CI templates for learners' repositories (templates/ci/): both YAML files
# parse, run one job per exercise that `grade list` names, and call
# templates/ci/grade-exercise.sh; then that script, for real, in this checkout
# with the built grader (GRADE_BUILD_DIR=BUILD): a failing exercise (the
# starter) exits 1 and leaves its JUnit and JSON reports, an unknown exercise
# exits 2 and still leaves a JUnit file saying why, strict isolation where
# this machine has it. A passing grade with the same options is cli.output_files.
#
#   tests/ci_templates_test.sh ROOT BUILD
#
# Why not a copy of the project as a learner's clone: a build folder grades
# only the project it was configured from (its precompiled interfaces record
# the absolute path of ROOT/exercises/*/*.h), so a copy needs a build of its
# own: minutes on 2 cores (4 to 10), too long for every run of the suite.
# .ci/run builds a fresh clone anyway.
#
# Exit 77 (skipped, reason printed) without python3. Without python3's yaml the
# YAML checks are reported not assessed; the rest runs.
set -uo pipefail
root=$(cd "${1:?usage: ci_templates_test.sh ROOT BUILD}" && pwd)
build=$(cd "${2:?usage: ci_templates_test.sh ROOT BUILD}" && pwd)
ci=$root/templates/ci
fail() {
  echo "FAILED: $*"
  exit 1
}
step() { echo "== $*"; }

command -v python3 >/dev/null || { echo "SKIPPED: python3 is needed to read the reports"; exit 77; }
work=$(mktemp -d /tmp/grade-ci-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

# ---------------------------------------------------------------- (a) the YAML
step "the exercises: grade list"
"$build/grader/grade" --root "$root" --build-dir "$build" list >"$work/list" || fail "grade list failed"
exercises=$(awk '$1 ~ /^[a-z][a-z0-9_]*$/ {print $1}' "$work/list" | sort | tr '\n' ' ')
[[ -n "${exercises// /}" ]] || fail "grade list printed no exercise"
echo "   $exercises"

for file in github-actions.yml gitlab-ci.yml; do
  step "$file calls templates/ci/grade-changed.sh"
  grep -q 'bash templates/ci/grade-changed.sh reports' "$ci/$file" || fail "$file does not run templates/ci/grade-changed.sh"
done

if python3 -c 'import yaml' 2>/dev/null; then
  step "both YAML files parse: one job that grades what changed, keeps ccache, needs no write permission"
  python3 - "$ci" <<'PY' || fail "the CI templates are inconsistent (above)"
import sys, yaml
ci = sys.argv[1]
problems = []
def expect(cond, what):
    if not cond:
        problems.append(what)

# GitHub Actions. (PyYAML reads the key `on` as the boolean True.)
gh = yaml.safe_load(open(f"{ci}/github-actions.yml"))
on = gh.get("on", gh.get(True, {}))
expect({"push", "pull_request", "workflow_dispatch"} <= set(on), f"github: triggers {list(on)}")
expect("exercises" in on["workflow_dispatch"].get("inputs", {}), "github: Run workflow takes no exercises")
# Fork pull requests get a read-only token: nothing may need more.
permissions = gh.get("permissions", {})
expect(all(v in ("read", "none") for v in permissions.values()), f"github: write permissions {permissions}")
jobs = gh.get("jobs", {})
expect(len(jobs) == 1, f"github: expected one job, got {list(jobs)}")
for name, job in jobs.items():
    expect("strategy" not in job, "github: a matrix builds the grader once per exercise")
    expect(all(v in ("read", "none") for v in job.get("permissions", {}).values()), "github: a job asks for write")
    container = job.get("container", {})
    expect(container.get("image") == "debian:bookworm", f"github: container image {container.get('image')}")
    expect("--privileged" in str(container.get("options", "")), "github: container is not --privileged")
    steps = job.get("steps", [])
    uses = {str(s.get("uses", "")).split("@")[0]: s for s in steps if "uses" in s}
    checkout = uses.get("actions/checkout", {})
    expect(checkout.get("with", {}).get("fetch-depth") == 0, "github: the checkout lacks the history to compare with")
    restore, save = uses.get("actions/cache/restore"), uses.get("actions/cache/save")
    expect(restore is not None and restore["with"]["path"] == ".ccache" and "hashFiles(" in restore["with"]["key"]
           and restore["with"].get("restore-keys"), "github: no ccache restored by the grader's sources")
    expect(save is not None and save["with"]["path"] == ".ccache" and str(save.get("if", "")).startswith("always()"),
           "github: ccache is not saved whatever the grades")
    expect(any("safe.directory" in str(s.get("run", "")) for s in steps), "github: git will refuse the container's checkout")
    runs = [s for s in steps if "templates/ci/grade-changed.sh" in str(s.get("run", ""))]
    expect(len(runs) == 1, f"github: {len(runs)} steps run grade-changed.sh, expected 1")
    for s in runs:
        env = s.get("env", {})
        expect(env.get("GRADE_SANDBOX") == "strict", "github: GRADE_SANDBOX is not strict")
        expect(env.get("CMAKE_CXX_COMPILER_LAUNCHER") == "ccache" and 'CCACHE_DIR="$GITHUB_WORKSPACE/.ccache"' in s["run"],
               "github: the build does not go through ccache in the container's workspace")
        expect("inputs.exercises" in str(env.get("GRADE_EXERCISES")), "github: the named exercises are not passed")
        expect("pull_request.base.sha" in str(env.get("GRADE_BASE")) and "event.before" in str(env.get("GRADE_BASE")),
               "github: GRADE_BASE is not the push's or the pull request's base")
        expect(s.get("id") == "grade", "github: the grade step has no id for its outputs")
    after = steps[steps.index(runs[0]) + 1:] if runs else []
    expect(all(str(s.get("if", "")).startswith("always()") for s in after), "github: a step after grading lacks always()")
    upload = uses.get("actions/upload-artifact")
    expect(upload is not None and upload.get("with", {}).get("path", "").rstrip("/") == "reports",
           "github: no upload-artifact of reports/")
    expect(any("GITHUB_STEP_SUMMARY" in str(s.get("run", "")) for s in after), "github: no job summary")
    reporter = uses.get("classroom-resources/autograding-grading-reporter")
    expect(reporter is not None and "steps.grade.outputs.runners" in str(reporter.get("with", {}).get("runners")),
           "github: no GitHub Classroom reporter fed by the grade step's runners")

# GitLab CI.
gl = yaml.safe_load(open(f"{ci}/gitlab-ci.yml"))
gl_jobs = {k: v for k, v in gl.items() if isinstance(v, dict) and "script" in v}
expect(len(gl_jobs) == 1, f"gitlab: expected one job, got {list(gl_jobs)}")
for name, job in gl_jobs.items():
    expect(job.get("image") == "debian:bookworm", f"gitlab: image {job.get('image')}")
    expect("parallel" not in job, "gitlab: a matrix builds the grader once per exercise")
    variables = job.get("variables", {})
    expect(variables.get("GRADE_SANDBOX") == "strict", "gitlab: GRADE_SANDBOX is not strict")
    expect(variables.get("CMAKE_CXX_COMPILER_LAUNCHER") == "ccache", "gitlab: the build does not go through ccache")
    expect(str(variables.get("GIT_DEPTH")) == "0", "gitlab: the clone lacks the history to compare with")
    expect(".ccache/" in job.get("cache", {}).get("paths", []), "gitlab: ccache is not cached")
    script = " ".join(job.get("script", []))
    expect("bash templates/ci/grade-changed.sh reports" in script and "CI_COMMIT_BEFORE_SHA" in script
           and "CI_MERGE_REQUEST_DIFF_BASE_SHA" in script, f"gitlab: the script is {job.get('script')}")
    artifacts = job.get("artifacts", {})
    expect(artifacts.get("when") == "always", "gitlab: artifacts are not kept always")
    expect(artifacts.get("reports", {}).get("junit") == "reports/*.xml", "gitlab: junit report is not reports/*.xml")

for p in problems:
    print("   " + p)
sys.exit(1 if problems else 0)
PY
  echo "   ok"
else
  echo "== NOT ASSESSED: YAML parsing (python3 cannot import yaml; install python3-yaml)"
fi

# ------------------------------------------------------------ (c) usage errors
script=$ci/grade-exercise.sh
step "grade-exercise.sh without arguments exits 2"
bash "$script" >"$work/out" 2>&1
status=$?
[[ $status -eq 2 ]] || fail "exit $status without arguments, expected 2: $(cat "$work/out")"
grep -q usage "$work/out" || fail "no usage message: $(cat "$work/out")"
step "grade-exercise.sh with an exercise id that is a path exits 2"
bash "$script" ../exercise_sdpa "$work/reports" >"$work/out" 2>&1
status=$?
[[ $status -eq 2 ]] || fail "exit $status for a path as exercise, expected 2: $(cat "$work/out")"

# ------------------------------------------- (b) the script in this checkout
export GRADE_BUILD_DIR=$build
export GRADE_PROGRESS=$work/progress.json  # not the checkout's own learner progress
# check_junit FILE: prints "tests failures errors" of the root element.
check_junit() {
  python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
assert root.tag in ("testsuite", "testsuites") and suites, f"root element {root.tag}"
total = lambda key: sum(int(s.get(key, 0)) for s in suites)
cases = sum(len(s.findall("testcase")) for s in suites)
assert cases == total("tests") > 0, f"{cases} testcases, tests={total('tests')}"
print(total("tests"), total("failures"), total("errors"))
PY
}
json_field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# grade_as_ci EXERCISE SANDBOX: the script as the CI job runs it, from the repository root.
grade_as_ci() {
  (cd "$root" && GRADE_SANDBOX="$2" bash templates/ci/grade-exercise.sh "$1" "$work/reports") \
    >"$work/$1.out" 2>"$work/$1.err"
}

step "exercise_mhsa (the starter), GRADE_SANDBOX=auto: exit 1, JUnit with failures, JSON verdict failed"
grade_as_ci exercise_mhsa auto
status=$?
[[ $status -eq 1 ]] || fail "exit $status, expected 1; stderr: $(tail -20 "$work/exercise_mhsa.err")"
counts=$(check_junit "$work/reports/exercise_mhsa.xml") || fail "bad JUnit file (not written when the grade fails?)"
read -r tests failures errors <<<"$counts"
echo "   tests=$tests failures=$failures errors=$errors"
((failures > 0)) || fail "JUnit has no failure"
[[ $(json_field "$work/reports/exercise_mhsa.json" verdict) == failed ]] || fail "the JSON verdict is not failed"
[[ $(json_field "$work/reports/exercise_mhsa.classroom.json" status) == fail ]] ||
  fail "no GitHub Classroom result saying fail: $(cat "$work/reports/exercise_mhsa.classroom.json")"

step "an unknown exercise: exit 2, and still a JUnit file that says why"
grade_as_ci exercise_nope auto
status=$?
[[ $status -eq 2 ]] || fail "exit $status, expected 2; stderr: $(tail -5 "$work/exercise_nope.err")"
counts=$(check_junit "$work/reports/exercise_nope.xml") || fail "no JUnit file for a grade that could not run"
read -r tests failures errors <<<"$counts"
((errors == 1)) || fail "expected one error testcase, got tests=$tests failures=$failures errors=$errors"
grep -q "unknown exercise" "$work/reports/exercise_nope.xml" || fail "the JUnit file does not say why: $(cat "$work/reports/exercise_nope.xml")"

# grade-changed.sh: what a push changed, or what is named; starters are neutral.
changed_as_ci() {  # REPORTS, then VAR=VALUE... for the environment
  local reports=$1
  shift
  : >"$work/github_env"
  : >"$work/github_output"
  (cd "$root" && env GITHUB_ENV="$work/github_env" GITHUB_OUTPUT="$work/github_output" GRADE_SANDBOX=auto "$@" \
    bash templates/ci/grade-changed.sh "$reports") >"$work/changed.out" 2>&1
}
step "grade-changed.sh: an exercise named that is still its starter is not started: neutral, exit 0"
changed_as_ci "$work/changed" GRADE_EXERCISES=exercise_mhsa,exercise_sdpa
status=$?
((status == 0)) || fail "exit $status for starters, expected 0: $(cat "$work/changed.out")"
grep -q '| exercise_mhsa | not started |' "$work/changed/summary.md" || fail "summary: $(cat "$work/changed/summary.md")"
grep -qx 'runners=' "$work/github_output" || fail "runners for Classroom: $(cat "$work/github_output")"
[[ ! -s $work/github_env ]] || fail "a Classroom result for an exercise not graded: $(cat "$work/github_env")"
step "grade-changed.sh: nothing changed since the base: nothing graded, exit 0"
changed_as_ci "$work/changed2" GRADE_BASE="$(git -C "$root" rev-parse HEAD 2>/dev/null || echo none)"
status=$?
((status == 0)) || fail "exit $status, expected 0: $(cat "$work/changed.out")"
if git -C "$root" rev-parse HEAD >/dev/null 2>&1 && git -C "$root" diff --quiet HEAD -- exercises/; then
  grep -q 'no learner file changed' "$work/changed2/summary.md" || fail "summary: $(cat "$work/changed2/summary.md")"
fi
step "grade-changed.sh: an unknown exercise named exits 2, and what is typed is not a glob"
changed_as_ci "$work/changed3" GRADE_EXERCISES=exercise_nope
status=$?
((status == 2)) || fail "exit $status, expected 2: $(cat "$work/changed.out")"
changed_as_ci "$work/changed4" 'GRADE_EXERCISES=*'
status=$?
((status == 2)) && grep -q "no exercise '\*'" "$work/changed.out" || fail "exit $status for '*': $(cat "$work/changed.out")"

step "GRADE_SANDBOX=strict where this machine can isolate"
if "$build/grader/grade" --root "$root" --build-dir "$build" sandbox >"$work/sandbox" 2>&1; then
  grade_as_ci exercise_sdpa strict
  status=$?
  [[ $status -eq 1 ]] || fail "strict: exit $status for the starter, expected 1; stderr: $(tail -20 "$work/exercise_sdpa.err")"
  isolation=$(json_field "$work/reports/exercise_sdpa.json" sandbox)
  [[ $isolation == *"namespaces (bwrap)"* ]] || fail "strict: the JSON report says sandbox '$isolation'"
  echo "   exit 1 (the starter), graded under: $isolation"
else
  echo "   NOT ASSESSED: this machine cannot isolate ($(head -1 "$work/sandbox"))"
fi

echo "PASSED"
