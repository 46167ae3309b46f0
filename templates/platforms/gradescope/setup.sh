#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image:
# the zip is unpacked in /autograder/source, the grader's sources under
# grader/. It installs the Debian packages the grader needs and builds the
# grader and this assignment's exercise (a few minutes). The image must be
# Debian bookworm or a base with its packages (docs/teaching.md).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/grader"
./grade build @EXERCISE@
