#!/usr/bin/env bash
# Text the learner chooses never makes the grader fault. Random names (blanks,
# line breaks, '%', control bytes, bytes that are not UTF-8, number-like words,
# the driver's own line formats, long ones) are registered as Dropouts,
# buffers and parameters of an otherwise correct multi-head self-attention,
# and random texts are thrown from forward; the files are graded as a batch,
# then as a class folder and merged. Every file must get a learner's verdict
# (never grader_error), and `grade`, `grade class` and `grade merge` must not
# exit 3. The seed is printed; GRADER_FUZZ_SEED=N repeats a run.
#   tests/learner_text_fuzz.sh ROOT BUILD [COUNT]
set -uo pipefail
root=$1 build=$2 count=${3:-10}
grade=("$build/grader/grade" --root "$root" --build-dir "$build")
seed=${GRADER_FUZZ_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
echo "seed $seed (GRADER_FUZZ_SEED=$seed repeats this run)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED (seed $seed): $*"; exit 1; }

python3 - "$root/solutions/exercise_mhsa/mhsa.cpp" "$work/files" "$count" "$seed" <<'PY' || fail "could not write the files"
import os, random, sys
solution, out, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
os.makedirs(out)
source = open(solution).read()
anchor = '  this->dropout = register_module("dropout", torch::nn::Dropout(dropout));'
assert anchor in source
forward = 'torch::Tensor MultiHeadSelfAttentionImpl::forward(const torch::Tensor& x) {'
assert forward in source

def text(allow_dot):
    # Half the time a name the exercise knows, a separator and a tail: the
    # shapes that a parser reading by position would take for a field.
    if rng.random() < 0.5:
        value = (rng.choice(["dropout", "pe", "q_proj", "out_proj", "(the module itself)", ""]) +
                 rng.choice([" ", "\n", "\t", "%", "%20", " \n"]) +
                 rng.choice(["x", "0", "1", "0.1", "1e999", "nan", "-", "Double 0 50 16", "24 24", ""]))
    else:
        value = {
            0: lambda: "".join(rng.choice(" \t\n\r%\\\"'") for _ in range(rng.randrange(1, 6))),
            1: lambda: bytes(rng.randrange(1, 256) for _ in range(rng.randrange(1, 12))).decode("latin-1"),
            2: lambda: "\xc3\x28\xe2\x82" + "\u00e4\u6f22" + "\u202e",
            3: lambda: "n" * rng.randrange(1, 6000),
            4: lambda: "%" + "".join(rng.choice("0123456789ABCDEFG%") for _ in range(rng.randrange(1, 8))),
        }[rng.randrange(5)]()
    if not allow_dot:
        value = value.replace(".", "_")
    return value or "_"

def literal(value):
    data = value.encode("utf-8", "surrogateescape") if any(ord(c) > 255 for c in value) else value.encode("latin-1")
    return 'std::string("' + "".join("\\%03o" % b for b in data) + '", %d)' % len(data)

for i in range(count):
    # One Dropout whose name begins with the registered one's, then more items.
    lines = ["  register_module(%s, torch::nn::Dropout(0.25));" %
             literal("dropout" + rng.choice([" ", " \n", "\t", "%"]) +
                     rng.choice(["x", "0", "0_1", "1e999", "nan", "", "Double 0 50 16"]))]
    for _ in range(rng.randrange(1, 4)):
        what = rng.randrange(3)
        if what == 0:
            lines.append("  register_module(%s, torch::nn::Dropout(0.25));" % literal(text(False)))
        elif what == 1:
            lines.append("  register_buffer(%s, torch::zeros({%d}));" % (literal(text(False)), rng.randrange(1, 4)))
        else:
            lines.append("  register_parameter(%s, torch::zeros({%d}));" % (literal(text(False)), rng.randrange(1, 4)))
    body = source.replace(anchor, "\n".join(lines) + "\n" + anchor)
    if rng.random() < 0.4:
        body = body.replace(forward, forward + "\n  if (x.size(1) %% 2 == %d) throw std::runtime_error(%s);" %
                            (rng.randrange(2), literal(text(True))))
    if "#include <string>" not in body:
        body = body.replace('#include "mhsa.h"', '#include "mhsa.h"\n\n#include <stdexcept>\n#include <string>')
    open(os.path.join(out, "names_%02d.cpp" % i), "w").write(body)
PY

"${grade[@]}" exercise_mhsa --submission "$work/files" --jobs 2 --format json >"$work/batch.json" 2>"$work/batch.err"
status=$?
((status != 3)) || { cat "$work/batch.err"; fail "the batch exited 3 (a grader fault)"; }
python3 - "$work/batch.json" "$count" <<'PY' || fail "a file did not get a learner's verdict"
import json, sys
reports = json.load(open(sys.argv[1]))
assert len(reports) == int(sys.argv[2]), "%d reports for %s files" % (len(reports), sys.argv[2])
bad = [(r.get("submission"), r.get("verdict"), r.get("summary")) for r in reports
       if r.get("verdict") in (None, "grader_error")]
for item in bad:
    print("not a learner's verdict:", item)
sys.exit(1 if bad else 0)
PY

mkdir -p "$work/class"
for file in "$work"/files/names_0[0-2].cpp; do
  student=$(basename "$file" .cpp)
  mkdir -p "$work/class/$student"
  cp "$file" "$work/class/$student/mhsa.cpp"
done
"${grade[@]}" class "$work/class" --exercise exercise_mhsa --results "$work/results" --jobs 2 >"$work/class.out" 2>&1
status=$?
((status == 0)) || { cat "$work/class.out"; fail "grade class exited $status (every student got a verdict: 0)"; }
"${grade[@]}" merge "$work/results" --gradebook "$work/book" >"$work/merge.out" 2>&1
status=$?
((status == 0)) || { cat "$work/merge.out"; fail "grade merge exited $status"; }
echo "OK: $count files with random names and error texts, each a learner's verdict; class and merge exit 0"
