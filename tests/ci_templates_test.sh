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
  step "$file calls templates/ci/grade-exercise.sh"
  grep -q 'bash templates/ci/grade-exercise.sh ' "$ci/$file" || fail "$file does not run templates/ci/grade-exercise.sh"
done

if python3 -c 'import yaml' 2>/dev/null; then
  step "both YAML files parse; their matrices list exactly the exercises; each job runs the script"
  python3 - "$ci" "$exercises" <<'PY' || fail "the CI templates are inconsistent (above)"
import sys, yaml
ci, exercises = sys.argv[1], sorted(sys.argv[2].split())
problems = []
def expect(cond, what):
    if not cond:
        problems.append(what)

# GitHub Actions. (PyYAML reads the key `on` as the boolean True.)
gh = yaml.safe_load(open(f"{ci}/github-actions.yml"))
expect(isinstance(gh, dict) and ("on" in gh or True in gh), "github: no `on:` trigger")
jobs = gh.get("jobs", {}) if isinstance(gh, dict) else {}
expect(len(jobs) == 1, f"github: expected one job, got {list(jobs)}")
for name, job in jobs.items():
    strategy = job.get("strategy", {})
    matrix = strategy.get("matrix", {}).get("exercise")
    expect(isinstance(matrix, list) and sorted(matrix) == exercises,
           f"github: matrix.exercise {matrix} != grade list {exercises}")
    expect(strategy.get("fail-fast") is False, "github: fail-fast is not false")
    container = job.get("container", {})
    expect(container.get("image") == "debian:bookworm", f"github: container image {container.get('image')}")
    expect("--privileged" in str(container.get("options", "")), "github: container is not --privileged")
    steps = job.get("steps", [])
    runs = [s for s in steps if "templates/ci/grade-exercise.sh" in str(s.get("run", ""))]
    expect(len(runs) == 1, f"github: {len(runs)} steps run grade-exercise.sh, expected 1")
    for s in runs:
        expect(s["run"].strip() == 'bash templates/ci/grade-exercise.sh "${{ matrix.exercise }}" reports',
               f"github: the grade step runs {s['run']!r}")
        expect(s.get("env", {}).get("GRADE_SANDBOX") == "strict", "github: GRADE_SANDBOX is not strict")
    uses = {str(s.get("uses", "")).split("@")[0]: s for s in steps if "uses" in s}
    expect("actions/checkout" in uses, "github: no actions/checkout")
    upload = uses.get("actions/upload-artifact")
    expect(upload is not None and upload.get("if") == "always()"
           and upload.get("with", {}).get("path", "").rstrip("/") == "reports"
           and "${{ matrix.exercise }}" in upload.get("with", {}).get("name", ""),
           "github: no upload-artifact of reports/ with if: always() and a name per exercise")
    junit = [s for s in steps if "junit" in str(s.get("uses", "")).lower()]
    expect(len(junit) == 1 and junit[0].get("if") == "always()"
           and junit[0].get("with", {}).get("report_paths") == "reports/*.xml",
           "github: no JUnit reporter of reports/*.xml with if: always()")
    # Every step after the grade one must run although grading failed.
    after = steps[steps.index(runs[0]) + 1:] if runs else []
    expect(all(s.get("if") == "always()" for s in after), "github: a step after grading lacks if: always()")

# GitLab CI.
gl = yaml.safe_load(open(f"{ci}/gitlab-ci.yml"))
gl_jobs = {k: v for k, v in gl.items() if isinstance(v, dict) and "script" in v}
expect(len(gl_jobs) == 1, f"gitlab: expected one job, got {list(gl_jobs)}")
for name, job in gl_jobs.items():
    expect(job.get("image") == "debian:bookworm", f"gitlab: image {job.get('image')}")
    matrix = job.get("parallel", {}).get("matrix", [])
    ids = []
    for entry in matrix:
        value = entry.get("EXERCISE", [])
        ids += value if isinstance(value, list) else [value]
    expect(sorted(ids) == exercises, f"gitlab: parallel matrix EXERCISE {ids} != grade list {exercises}")
    expect(job.get("script") == ['bash templates/ci/grade-exercise.sh "$EXERCISE" reports'],
           f"gitlab: the script is {job.get('script')}")
    expect(job.get("variables", {}).get("GRADE_SANDBOX") == "strict", "gitlab: GRADE_SANDBOX is not strict")
    artifacts = job.get("artifacts", {})
    expect(artifacts.get("when") == "always", "gitlab: artifacts are not kept always")
    expect(artifacts.get("reports", {}).get("junit") == "reports/*.xml", "gitlab: junit report is not reports/*.xml")
    expect([p.rstrip("/") for p in artifacts.get("paths", [])] == ["reports"], "gitlab: artifacts paths are not reports/")

for p in problems:
    print("   " + p)
sys.exit(1 if problems else 0)
PY
  echo "   ok"
else
  echo "== NOT ASSESSED: YAML parsing and matrices (python3 cannot import yaml; install python3-yaml)"
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

step "an unknown exercise: exit 2, and still a JUnit file that says why"
grade_as_ci exercise_nope auto
status=$?
[[ $status -eq 2 ]] || fail "exit $status, expected 2; stderr: $(tail -5 "$work/exercise_nope.err")"
counts=$(check_junit "$work/reports/exercise_nope.xml") || fail "no JUnit file for a grade that could not run"
read -r tests failures errors <<<"$counts"
((errors == 1)) || fail "expected one error testcase, got tests=$tests failures=$failures errors=$errors"
grep -q "unknown exercise" "$work/reports/exercise_nope.xml" || fail "the JUnit file does not say why: $(cat "$work/reports/exercise_nope.xml")"

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
