#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image:
# the zip is unpacked in /autograder/source, the grader's sources under
# grader/. It installs the Debian packages the grader needs and builds the
# grader and this assignment's exercise (a few minutes). The image must be
# Debian bookworm or a base with its packages (docs/teaching.md). Then the
# sources of the reference and the checks, the compiled reference and the
# grade program are made readable by root only (scripts/seal.sh): Gradescope
# runs this and run_autograder as root, the submission's code as user nobody.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/grader"
./grade build @EXERCISE@
scripts/seal.sh "$PWD" "$PWD/build"
