#!/bin/bash
# Prints, per exercise, how well the grader names the mistakes of the wrong
# submissions (written by corpus_test): the share whose labelled focus points
# were all reported missed, the recall and precision of the reported focus
# points against the labels, and the reports that show a focus point not
# assessed here as met. Fails below 100% recall or precision, or above 0.
results=${1:?usage: diagnosis_share.sh RESULTS_DIR}
[ -d "$results" ] || { echo "no corpus results in $results (did the corpus tests run?)"; exit 1; }
status=0
for dir in "$results"/*/; do
  exercise=$(basename "$dir")
  files=$(ls "$dir")
  total=$(echo "$files" | grep -c .)
  if ((total > 0)); then
    named=$(grep -lx named "$dir"* 2>/dev/null | wc -l)
    unseen_total=$(echo "$files" | grep -c '^unseen_')
    unseen_named=$(grep -lx named "$dir"unseen_* 2>/dev/null | wc -l)
    read -r labelled reported correct < <(cat "$dir"* | awk '$1 == "labelled" {l += $2; r += $4; c += $6} END {print l + 0, r + 0, c + 0}')
    recall=$((labelled ? 100 * correct / labelled : 100))
    precision=$((reported ? 100 * correct / reported : 100))
    unexplained=$(grep -lx unexplained "$dir"* 2>/dev/null | wc -l)
    echo "$exercise: all labelled focus points reported missed for $named of $total wrong submissions ($((100 * named / total))%); unseen mistakes: $unseen_named of $unseen_total; recall $recall% ($correct of $labelled labelled points), precision $precision% ($correct of $reported reported points); labelled unexplained (no concept the evidence shows): $unexplained"
    grep -lx unexplained "$dir"* 2>/dev/null | sed 's/^/  unexplained: /'
    [ "$named" -eq "$total" ] && ((correct == labelled && correct == reported)) || status=1
    grep -Lx named "$dir"* 2>/dev/null | sed 's/^/  not named: /'
  fi
  met=$(awk '{s += $1} END {print s + 0}' "$dir.unassessed_met" 2>/dev/null || echo 0)
  echo "$exercise: focus points not assessed here but shown as met: ${met:-0}"
  ((${met:-0} == 0)) || status=1
done
exit $status
