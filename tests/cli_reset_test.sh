#!/usr/bin/env bash
# `grade reset` on a copy of the exercises: the learner's file is saved to a
# backup the command names, byte for byte, before the starter comes back; a
# second reset (nothing to save) changes nothing; two resets in the same second
# keep both backups. The starters are the pristine copies in .starter/.
#   tests/cli_reset_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
cp -a "$root/exercises" "$work/exercises"
export GRADE_PROGRESS=$work/state/progress.json
grade=("$build/grader/grade" --root "$work" --build-dir "$build")
file=$work/exercises/exercise_mhsa/mhsa.cpp
starter=$work/exercises/exercise_mhsa/.starter/mhsa.cpp

printf 'my work\n\xff bytes kept as they are\n' >"$file"
cp "$file" "$work/mine"
out=$("${grade[@]}" reset exercise_mhsa) || fail "reset: $out"
backup=$(sed -n 's/^Your .* is saved as //p' <<<"$out")
[[ -f $backup ]] || fail "the named backup does not exist: $out"
cmp -s "$backup" "$work/mine" || fail "the backup is not the learner's file byte for byte"
cmp -s "$file" "$starter" || fail "the file is not the starter after reset"
[[ $backup == "$work/state/backups/exercise_mhsa/"* ]] || fail "backup outside the learner's folder: $backup"

out=$("${grade[@]}" reset exercise_mhsa) || fail "second reset: $out"
grep -q "is the starter already" <<<"$out" || fail "a reset of the starter did something: $out"
[[ $(ls "$work/state/backups/exercise_mhsa" | wc -l) -eq 1 ]] || fail "a reset of the starter made a backup"

for text in one two; do echo "$text" >"$file"; "${grade[@]}" reset exercise_mhsa >/dev/null || fail "reset $text"; done
[[ $(ls "$work/state/backups/exercise_mhsa" | wc -l) -eq 3 ]] || fail "resets in the same second overwrote a backup: $(ls "$work/state/backups/exercise_mhsa")"
grep -qx one "$work"/state/backups/exercise_mhsa/* || fail "the first quick backup was lost"

# --blank: the interface without the steps (backed up first, as any reset); graded
# untouched it is a starter, as the guided one is.
out=$("${grade[@]}" reset exercise_mhsa --blank) || fail "reset --blank: $out"
grep -q "is the blank starter" <<<"$out" || fail "reset --blank did not say what it wrote: $out"
grep -q "^ *// [0-9]\." "$starter" || fail "the guided starter has no numbered steps to test against"
! grep -q "^ *// [0-9]\." "$file" || fail "the blank starter still holds the steps: $(cat "$file")"
grep -q "forward" "$file" || fail "the blank starter lost the interface: $(cat "$file")"
# (Graded in the project itself: its precompiled interfaces name its own headers.)
json=$("$build/grader/grade" --root "$root" --build-dir "$build" exercise_mhsa --submission "$file" --format json \
  --color never 2>/dev/null)
python3 -c 'import json, sys; r = json.loads(sys.argv[1]); assert r["starter"] is True, r["starter"]' "$json" ||
  fail "the untouched blank starter is not graded as a starter: ${json:0:400}"

"${grade[@]}" reset >/dev/null 2>&1
(($? == 2)) || fail "reset without an exercise is not a usage error"
echo "PASSED: backup named and exact, starter restored, blank starter written and recognised, nothing overwritten"
