#!/usr/bin/env bash
# What a grading platform runs, for some exercises (docs/teaching.md: grading on
# platforms). `grade package` calls this:
#
#   scripts/package.sh gradescope|exercism|prairielearn EXERCISE... --to DIR [-- grade options]
#
#   gradescope    DIR/autograder.zip (setup.sh, run_autograder, grader/): one
#                 exercise per Gradescope assignment
#   exercism      DIR/bin/run.sh, DIR/Dockerfile, DIR/grader/: a test runner
#                 image for the exercises' slugs
#   prairielearn  DIR/run.sh, DIR/Dockerfile, DIR/grader/ (the external grader
#                 image) and DIR/questions/<exercise>/ (info.json, question.html,
#                 the starter)
#
# Each holds the grader's sources (its tracked files, no build folder) and
# builds inside the platform's image. The model solutions and the test suite
# (whose corpus holds correct answers too) stay out: a platform's container
# may not isolate a submission from the files beside it. CUDA exercises are
# refused: the platforms' graders have no GPU. Grade options after -- (default:
# --sandbox auto, since the platforms' containers are not privileged) are
# given to every grade.
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true  # bash 5.2: "&" in a ${x//a/b} replacement stays "&"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage() {
  echo "usage: grade package gradescope|exercism|prairielearn EXERCISE... --to DIR [-- grade options]" >&2
  exit 2
}
(($# >= 1)) || usage
platform=$1
shift
case $platform in gradescope | exercism | prairielearn) ;; *) usage ;; esac
exercises=() to="" options=(--sandbox auto)
while (($#)); do
  case $1 in
    --to) to=${2:-}; shift 2 || usage ;;
    --to=*) to=${1#--to=}; shift ;;
    --) shift; options=("$@"); break ;;
    -*) usage ;;
    *) exercises+=("$1"); shift ;;
  esac
done
[[ -n $to ]] && ((${#exercises[@]})) || usage
for id in "${exercises[@]}"; do
  [[ $id =~ ^[a-z0-9_]+$ && -f $root/exercises/$id/exercise.yaml ]] ||
    { echo "grade package: no exercise '$id' (see: ./grade list)" >&2; exit 2; }
done
for id in "${exercises[@]}"; do
  if grep -q '^learner_files: *\[[^]]*\.cu' "$root/exercises/$id/exercise.yaml"; then
    echo "grade package: $id is a CUDA exercise: the platforms grade without a GPU, where it is never assessed" >&2
    exit 2
  fi
done
if [[ $platform == gradescope ]] && ((${#exercises[@]} != 1)); then
  echo "grade package gradescope: one exercise per Gradescope assignment (package each on its own)" >&2
  exit 2
fi
[[ -e $to && -n $(ls -A "$to" 2>/dev/null) ]] && { echo "grade package: $to is not empty" >&2; exit 2; }

learner_file() { sed -n 's/^learner_files: *\[\([^],]*\).*/\1/p' "$root/exercises/$1/exercise.yaml" | tr -d ' '; }
title_of() { sed -n 's/^title: *//p' "$root/exercises/$1/exercise.yaml"; }
quoted_options=$(printf '%q ' "${options[@]}")
# A template with its @NAME@ fields filled (values are plain ids, file names
# and options already quoted for bash).
fill() {  # TEMPLATE OUTPUT NAME=VALUE...
  local text
  text=$(cat "$root/templates/platforms/$1")
  local pair
  for pair in "${@:3}"; do text=${text//@${pair%%=*}@/${pair#*=}}; done
  printf '%s\n' "$text" >"$2"
}
# The grader's sources: the files git tracks (as they are in the working tree),
# or, outside a git checkout, everything but build folders and learner state.
copy_grader() {  # DEST
  mkdir -p "$1"
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$root" && git ls-files -z -- . ':(exclude)solutions' ':(exclude)tests' | tar --null -T - -cf -) |
      tar -C "$1" -xf -
  else
    tar -C "$root" --exclude=./build --exclude='./build-*' --exclude=./.git --exclude=./.learner \
      --exclude=./solutions --exclude=./tests -cf - . | tar -C "$1" -xf -
  fi
  # Every exercise's learner files as its starters, whatever the packager's
  # checkout holds (an answer worked on there is not the course's to ship).
  local dir file
  for dir in "$1"/exercises/*/; do
    [[ -d $dir.starter ]] || continue
    for file in "$dir".starter/*; do
      [[ -f $file ]] && cp "$file" "$dir$(basename "$file")"
    done
  done
}

mkdir -p "$to"
to=$(cd "$to" && pwd)
case $platform in
  gradescope)
    id=${exercises[0]}
    stage=$(mktemp -d)
    trap 'rm -rf "$stage"' EXIT
    copy_grader "$stage/grader"
    fill gradescope/setup.sh "$stage/setup.sh" "EXERCISE=$id"
    fill gradescope/run_autograder "$stage/run_autograder" "EXERCISE=$id" "FILE=$(learner_file "$id")" \
      "OPTIONS=$quoted_options"
    chmod 755 "$stage/setup.sh" "$stage/run_autograder"
    if command -v cmake >/dev/null; then
      (cd "$stage" && cmake -E tar cf "$to/autograder.zip" --format=zip setup.sh run_autograder grader)
    else
      (cd "$stage" && python3 -c 'import shutil, sys; shutil.make_archive(sys.argv[1], "zip", ".")' "$to/autograder")
    fi
    echo "grade package: $to/autograder.zip (upload it as the autograder of the assignment for $id)"
    ;;
  exercism)
    copy_grader "$to/grader"
    mkdir -p "$to/bin"
    slugs=""
    for id in "${exercises[@]}"; do
      slug=${id#exercise_}
      slugs+="  ${slug//_/-}) exercise=$id file=$(learner_file "$id") ;;"$'\n'
    done
    fill exercism/run.sh "$to/bin/run.sh" "SLUGS=${slugs%$'\n'}" "OPTIONS=$quoted_options"
    fill exercism/Dockerfile "$to/Dockerfile" "EXERCISES=${exercises[*]}"
    chmod 755 "$to/bin/run.sh"
    echo "grade package: $to (docker build -t attention-grader-exercism $to)"
    ;;
  prairielearn)
    copy_grader "$to/grader"
    files=""
    for id in "${exercises[@]}"; do files+="  $id) file=$(learner_file "$id") ;;"$'\n'; done
    fill prairielearn/run.sh "$to/run.sh" "FILES=${files%$'\n'}" "OPTIONS=$quoted_options"
    fill prairielearn/Dockerfile "$to/Dockerfile" "EXERCISES=${exercises[*]}"
    chmod 755 "$to/run.sh"
    for id in "${exercises[@]}"; do
      question=$to/questions/$id file=$(learner_file "$id")
      mkdir -p "$question"
      cp "$root/exercises/$id/.starter/$file" "$question/$file"
      # A stable id per exercise: packaging again updates the same question.
      hash=$(printf 'attention-grader/%s' "$id" | sha256sum)
      uuid="${hash:0:8}-${hash:8:4}-5${hash:13:3}-8${hash:17:3}-${hash:20:12}"
      python3 - "$question/info.json" "$uuid" "$(title_of "$id")" "$id" <<'PY'
import json, sys
path, uuid, title, exercise = sys.argv[1:]
json.dump({
    "uuid": uuid,
    "title": title,
    "topic": "Transformers",
    "type": "v3",
    "singleVariant": True,
    "gradingMethod": "External",
    "externalGradingOptions": {
        "enabled": True,
        "image": "attention-grader-pl",
        "entrypoint": f"/attention-grader/run.sh {exercise}",
        # PrairieLearn's default is 30 s: a first compile and the checks take longer.
        "timeout": 300,
    },
}, open(path, "w"), indent=2)
PY
      {
        echo "<pl-question-panel>"
        echo "<p>Implement <code>$file</code> (the statement below), then save and grade.</p>"
        echo "<pre>"
        sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' "$root/exercises/$id/README.md"
        echo "</pre>"
        echo "</pl-question-panel>"
        echo "<pl-file-editor file-name=\"$file\" ace-mode=\"ace/mode/c_cpp\" source-file-name=\"$file\"></pl-file-editor>"
        echo "<pl-submission-panel>"
        echo "  <pl-external-grader-results></pl-external-grader-results>"
        echo "  <pl-file-preview></pl-file-preview>"
        echo "</pl-submission-panel>"
      } >"$question/question.html"
    done
    echo "grade package: $to (docker build -t attention-grader-pl $to; questions/ into your course)"
    ;;
esac
