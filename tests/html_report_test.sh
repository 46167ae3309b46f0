#!/usr/bin/env bash
# The HTML report in a real browser: Debian's chromium, headless, loads pages
# the grader wrote for real grades (a mask mistake in exercise_mha, a softmax
# over the wrong axis in exercise_sdpa, a correct exercise_mhsa) and must log
# nothing to the console, and its screenshot must show every heatmap cell's
# colour that the page declares. Two controls prove the checks can fail: a
# page with a script error must be caught, and the real page with its heatmaps
# hidden must fail the pixel check.
#   tests/html_report_test.sh ROOT BUILD
# Exit 77 (skipped, reason printed) without chromium or a python3 with PIL
# (Debian: chromium, python3-pil).
set -uo pipefail
root=$(cd "$1" && pwd) build=$(cd "$2" && pwd)
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[[ -n $browser ]] || { echo "SKIPPED: no headless browser (Debian: chromium)"; exit 77; }
python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import PIL' 2>/dev/null; then python=$candidate; break; fi
done
[[ -n $python ]] || { echo "SKIPPED: no python3 with PIL to read screenshots (Debian: python3-pil)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
grade=("$build/grader/grade" --root "$root" --build-dir "$build")
failures=0
fail() { echo "FAILED: $*"; failures=$((failures + 1)); }

# PAGE NAME: a screenshot in $work/NAME.png; the console's lines in $work/NAME.console.
shoot() {
  local page=$1 name=$2
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$work/profile-$name" \
    --force-color-profile=srgb --hide-scrollbars --enable-logging=stderr --v=0 \
    --window-size=1280,2400 --screenshot="$work/$name.png" "file://$page" >"$work/$name.log" 2>&1
  local status=$?
  grep -a "CONSOLE" "$work/$name.log" >"$work/$name.console"
  if ((status != 0)) || [[ ! -s $work/$name.png ]]; then
    echo "the browser did not take a screenshot of $page (exit $status):"
    tail -5 "$work/$name.log"
    return 1
  fi
}

# PAGE NAME: every heatmap cell colour the page declares is drawn.
pixels() {
  "$python" - "$1" "$work/$2.png" <<'PY'
import re, sys
from PIL import Image
page = open(sys.argv[1], encoding="utf-8").read()
fills = set(re.findall(r'<rect class="cell"[^>]*fill="#([0-9a-f]{6})"', page))
# White cells look like the background: only colours a screenshot can tell apart.
colours = {tuple(int(f[i:i + 2], 16) for i in (0, 2, 4)) for f in fills}
colours = {c for c in colours if min(c) < 235}
if not colours:
    sys.exit("the page declares no coloured heatmap cell")
image = Image.open(sys.argv[2]).convert("RGB")
counts = {colour: n for n, colour in image.getcolors(maxcolors=1 << 24)}
missing = []
for want in colours:
    seen = sum(c for got, c in counts.items() if max(abs(a - b) for a, b in zip(got, want)) <= 2)
    if seen < 300:  # a cell is 44 x 44 pixels, less its number
        missing.append(("#%02x%02x%02x" % want, seen))
if missing:
    sys.exit("%d of %d heatmap colours are not on the screen: %s" % (len(missing), len(colours), missing[:5]))
print("%d heatmap colours drawn" % len(colours))
PY
}

# NAME EXERCISE SUBMISSION EXPECTED_VERDICT: grade it, write the page, check it in the browser.
page_of() {
  local name=$1 exercise=$2 submission=$3 verdict=$4
  "${grade[@]}" "$exercise" --submission "$submission" --seed 11 --format json --output "html=$work/$name.html" \
    >"$work/$name.json" 2>"$work/$name.err"
  if ! grep -q "\"verdict\": \"$verdict\"" "$work/$name.json"; then
    fail "$name: expected verdict $verdict"
    head -c 600 "$work/$name.json" "$work/$name.err"
    return 1
  fi
  [[ -s $work/$name.html ]] || { fail "$name: no HTML page written"; return 1; }
}

# The controls first: a checker that cannot fail proves nothing.
cat >"$work/broken.html" <<'HTML'
<!DOCTYPE html><html><head><meta charset="utf-8"/><title>control</title></head>
<body><p>control</p><script>not_defined_anywhere();</script></body></html>
HTML
if shoot "$work/broken.html" broken; then
  [[ -s $work/broken.console ]] || fail "control: a page with a script error logged nothing the test can see"
else
  fail "control: the browser did not render a plain page"
fi

if page_of mask_inverted exercise_mha "$root/tests/submissions/exercise_mha/wrong/mask_inverted.cpp" failed; then
  grep -q 'class="differs"' "$work/mask_inverted.html" || fail "mask_inverted: the page does not show a difference"
fi
if page_of softmax_axis exercise_sdpa "$root/tests/submissions/exercise_sdpa/wrong/softmax_over_queries.cpp" failed; then
  grep -q '>NaN<' "$work/softmax_axis.html" || fail "softmax_axis: the NaN weights of a fully masked column are not shown"
fi
if page_of correct exercise_mhsa "$root/solutions/exercise_mhsa/mhsa.cpp" passed; then
  grep -q 'class="same"' "$work/correct.html" || fail "correct: the page does not say the weights match"
  grep -q 'class="differs"' "$work/correct.html" && fail "correct: the page shows a difference"
fi

for name in mask_inverted softmax_axis correct; do
  [[ -s $work/$name.html ]] || continue
  if ! shoot "$work/$name.html" "$name"; then fail "$name: no screenshot"; continue; fi
  if [[ -s $work/$name.console ]]; then
    fail "$name: the console is not empty:"
    head -5 "$work/$name.console"
  fi
  result=$(pixels "$work/$name.html" "$name" 2>&1) && echo "ok: $name: $result" || fail "$name: $result"
done

# The real page with its heatmaps hidden must fail the pixel check.
if [[ -s $work/mask_inverted.html ]]; then
  sed 's|</style>|svg { visibility: hidden; }</style>|' "$work/mask_inverted.html" >"$work/hidden.html"
  if shoot "$work/hidden.html" hidden; then
    pixels "$work/hidden.html" hidden >/dev/null 2>&1 && fail "control: hidden heatmaps passed the pixel check"
  else
    fail "control: no screenshot of the hidden page"
  fi
fi

((failures == 0)) || { echo "FAILED: $failures problem(s)"; exit 1; }
echo "PASSED: three report pages load with an empty console and draw every heatmap colour; both controls caught"
