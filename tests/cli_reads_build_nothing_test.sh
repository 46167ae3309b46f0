#!/usr/bin/env bash
# Commands that only read build no exercise (issue 50): help, list, show,
# hint, solution, interview --help, --report and --suggest ask ninja for the
# grader alone; a grade asks for the grader and its one exercise; an interview
# that picks its exercise asks for that one only.
#
# ./grade runs against a build folder of its own whose ninja is a stand-in
# that records the targets it is asked for and builds nothing; the grader
# binaries are the real ones (the build folder links to them), so the commands
# run for real after their build step.
#   tests/cli_reads_build_nothing_test.sh ROOT BUILD
set -uo pipefail
root=$1 real_build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*"; [[ -f $work/out ]] && tail -20 "$work/out"; exit 1; }

build=$work/build
mkdir -p "$build" "$work/bin"
for file in build.ninja toolchain.txt grader-inputs.txt; do
  [[ -f $real_build/$file ]] || fail "$real_build is not a configured build folder (no $file)"
  cp "$real_build/$file" "$build/"
done
ln -s "$real_build/grader" "$build/grader"
cat >"$work/bin/ninja" <<EOF
#!/usr/bin/env bash
# Records the targets asked for (the words after -C DIR and -j N), builds nothing.
args=("\$@") targets=()
for ((i = 0; i < \${#args[@]}; i++)); do
  case \${args[i]} in -C | -j) ((i++)) ;; *) targets+=("\${args[i]}") ;; esac
done
echo "\${targets[*]}" >>"$work/asked"
EOF
chmod +x "$work/bin/ninja"
export PATH=$work/bin:$PATH GRADE_BUILD_DIR=$build GRADE_FULL_CHECK=1 GRADE_PROGRESS=$work/progress.json

# asks "COMMAND..." WANT: the targets ninja was asked for by one command.
asks() {
  local want=${*: -1} args=("${@:1:$#-1}") got
  rm -f "$work/asked" "$build"/.grade-fresh*
  "$root/grade" "${args[@]}" </dev/null >"$work/out" 2>&1
  got=$(sort -u "$work/asked" 2>/dev/null | tr '\n' ' ' | sed 's/ $//')
  [[ $got == "$want" ]] || fail "./grade ${args[*]}: ninja was asked for '$got', want '$want'"
  echo "ok: ./grade ${args[*]} -> $want"
}

core=grader-core
asks --help "$core"
asks list "$core"
asks show exercise_mhsa "$core"
asks show exercise_mhsa --checks "$core"
asks hint exercise_mhsa "$core"
asks solution exercise_mhsa "$core"
asks exercise_mhsa --help "$core"
asks interview --help "$core"
asks interview --report "$core"
asks interview --suggest "$core"
# The controls: a grade builds its exercise, a named interview its own, an
# interview that picks one (the record is empty: the first in learning order)
# the grader first, then that exercise.
asks exercise_sdpa --submission "$root/solutions/exercise_sdpa/sdpa.cpp" "$core grader-exercise-exercise_sdpa"
first=$("$real_build/grader/grade" --root "$root" --build-dir "$real_build" interview --suggest | cut -f1)
[[ $first == exercise_* ]] || fail "interview --suggest printed '$first'"
rm -f "$work/asked" "$build"/.grade-fresh*
"$root/grade" interview --answers /dev/null </dev/null >"$work/out" 2>&1
got=$(tr '\n' '|' <"$work/asked")
[[ $got == "$core|$core grader-exercise-$first|" ]] || fail "an interview that picks $first asked ninja for '$got'"
echo "ok: ./grade interview -> $core, then $core grader-exercise-$first"
echo "PASSED"
