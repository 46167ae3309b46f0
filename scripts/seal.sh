#!/usr/bin/env bash
# seal.sh ROOT BUILD: after a platform image has built the grader (as root),
# makes the sources of the reference and of the checks, the compiled
# reference and the grade program unreadable to anyone but their owner. A
# platform's container may not isolate a submission from the files beside it
# (no bwrap there): the runner then reads as user nobody, who can read only
# what the runner itself needs (the runner, the exercise libraries it loads,
# the interface headers and precompiled headers it compiles against).
#   scripts/seal.sh /autograder/source/grader /autograder/source/grader/build
set -euo pipefail
root=${1:?usage: seal.sh ROOT BUILD}
build=${2:?usage: seal.sh ROOT BUILD}
sealed=("$root/reference" "$root/grader/checks" "$build/reference" "$build/grader/grade")
for path in "${sealed[@]}"; do
  [[ -e $path ]] || { echo "seal.sh: $path is missing (build the grader first)" >&2; exit 2; }
  chmod -R go-rwx "$path"
done
echo "seal.sh: only the owner can read ${sealed[*]}"
