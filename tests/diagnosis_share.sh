#!/bin/bash
# Prints, per exercise, the share of wrong submissions whose labelled focus
# points the grader reported missed (written by corpus_test); fails below 100%.
results=${1:?usage: diagnosis_share.sh RESULTS_DIR}
[ -d "$results" ] || { echo "no corpus results in $results (did the corpus tests run?)"; exit 1; }
status=0
for dir in "$results"/*/; do
  exercise=$(basename "$dir")
  total=$(ls "$dir" | wc -l)
  named=$(grep -lx named "$dir"* 2>/dev/null | wc -l)
  unseen_total=$(ls "$dir" | grep -c '^unseen_')
  unseen_named=$(grep -lx named "$dir"unseen_* 2>/dev/null | wc -l)
  echo "$exercise: labelled focus point reported missed for $named of $total wrong submissions ($((100 * named / total))%); unseen mistakes: $unseen_named of $unseen_total"
  [ "$named" -eq "$total" ] || status=1
  grep -Lx named "$dir"* 2>/dev/null | sed 's/^/  not named: /'
done
exit $status
