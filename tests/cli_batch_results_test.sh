#!/usr/bin/env bash
# A --submission folder graded in two shards with --results, one shard run
# twice (a retry): the results are rewritten, never duplicated, and the merge
# is complete with one row per file (the student is the file's stem).
#   tests/cli_batch_results_test.sh ROOT BUILD
set -uo pipefail
root=$1 build=$2
grade=("$build/grader/grade" --root "$root" --build-dir "$build")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; exit 1; }
mkdir "$work/subs"
cp "$root/solutions/exercise_sdpa/sdpa.cpp" "$work/subs/alice.cpp"
cp "$root/exercises/exercise_sdpa/sdpa.cpp" "$work/subs/bob.cpp"
for shard in 1/2 2/2 2/2; do
  "${grade[@]}" exercise_sdpa --submission "$work/subs" --results "$work/results" --shard "$shard" >"$work/out" 2>&1
  (($? <= 1)) || fail "shard $shard: $(cat "$work/out")"
done
files=$(find "$work/results" -type f | sort)
[[ $(wc -l <<<"$files") -eq 4 ]] || fail "expected 2 results and 2 manifests, found: $files"
"${grade[@]}" merge "$work/results" --gradebook "$work/book" >"$work/out" 2>&1 || fail "merge: $(cat "$work/out")"
book=$(tr -d '\r' <"$work/book/gradebook.csv")  # RFC 4180 lines end in CRLF
grep -q '^alice,17,17,17,passed,,$' <<<"$book" || fail "alice: $book"
grep -q '^bob,0,17,0,failed,,$' <<<"$book" || fail "bob: $book"
[[ $(wc -l <<<"$book") -eq 3 ]] || fail "one header and one row per file: $book"
# A lost shard: the merge says so and exits 3, never a complete gradebook.
rm "$work/results/.shards/shard-2-of-2.json"
"${grade[@]}" merge "$work/results" --gradebook "$work/book2" >"$work/out" 2>&1
status=$?
((status == 3)) || fail "merge with a lost shard exited $status"
grep -q "shard 2/2 has not finished" "$work/out" || fail "$(cat "$work/out")"
echo "PASSED: two shards and a retry, one result per file, a lost shard reported"
