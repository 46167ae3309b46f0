#!/usr/bin/env bash
# --output FILE without FORMAT= (issue 33): `--format html --output r.html`
# writes the page to r.html and the text report to the terminal; a bare
# r.json takes its extension's format; a bad --output is a usage error on
# standard error only (exit 2), never an error page on standard output.
#   tests/cli_output_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
grade=("$build/grader/grade" --root "$root" --build-dir "$build" exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"${grade[@]}" --format html --output "$work/r.html" >"$work/stdout" 2>"$work/stderr" || fail "exit $? for --format html --output r.html: $(cat "$work/stderr")"
grep -q "<!DOCTYPE html>" "$work/r.html" || fail "r.html is not the HTML page: $(head -c 200 "$work/r.html")"
grep -q "^Verdict: passed" "$work/stdout" || fail "the terminal did not get the text report: $(head -c 300 "$work/stdout")"

"${grade[@]}" --output "$work/report.json" >/dev/null 2>&1 || fail "--output report.json failed"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["verdict"] == "passed"' "$work/report.json" 2>/dev/null ||
  grep -q '"verdict": "passed"' "$work/report.json" || fail "report.json is not the JSON report"

"${grade[@]}" --format html --output "$work/report" >"$work/stdout" 2>"$work/stderr"
# (with --format given, a bare name takes it: this one is fine)
(($? == 0)) && grep -q "<!DOCTYPE html>" "$work/report" || fail "--format html --output report did not write the page"

"${grade[@]}" --format html --output "xml=$work/bad.xml" >"$work/stdout" 2>"$work/stderr"
status=$?
((status == 2)) || fail "a bad --output exited $status, not 2"
[[ ! -s $work/stdout ]] || fail "a bad --output printed on standard output: $(head -c 200 "$work/stdout")"
grep -q "'xml' is not a format" "$work/stderr" || fail "the usage error does not say what is wrong: $(cat "$work/stderr")"
"${grade[@]}" --output "$work/report.pdf" >/dev/null 2>"$work/stderr"
(($? == 2)) && grep -q "cannot tell the format" "$work/stderr" || fail "--output report.pdf: $(cat "$work/stderr")"
echo "PASSED: --output FILE by --format or extension; bad --output a usage error on standard error only"
