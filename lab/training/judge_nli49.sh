#!/usr/bin/env bash
# Issue 49: judge the fine-tuned entailment branch by lab/records/phenomena/RULE.md.
#
# The detector's scores are those of lab/records/claim_check/signals.jsonl (the same
# answers, read once by the shipped detector): only the claim check runs again, with the
# new branch. The claim term is fitted on the train-role held-out sets, then read on the
# select-role sets beside the detector alone (the default); the phenomena suite runs the
# whole guard with the branch installed (the shipped one is put back from git after).
set -euo pipefail
RUN=${RUN:-runs/nli49}
OUT=${OUT:-$RUN/judge}
OLD=lab/records/claim_check/signals.jsonl
mkdir -p "$OUT"
[ -f "$RUN/branch/model.safetensors" ] || python -m lab.training.finetune_nli export --run "$RUN" --out "$RUN/branch"
for set in faithjudge_train_heldout ragtruth_train_heldout ragtruth_dev_select attributionbench faithjudge_select; do
  [ -s "$OUT/$set.jsonl" ] || python -m lab.training.claim_fit signals --set "$set" \
      --branch "$RUN/branch" --reuse-detector "$OLD" --out "$OUT/$set.jsonl" > "$OUT/$set.log"
done
rm -rf "$OUT/detector" && cp -r core/_bundled/detector "$OUT/detector"
python -m lab.training.claim_fit fit "$OUT/faithjudge_train_heldout.jsonl" \
    "$OUT/ragtruth_train_heldout.jsonl" --detector "$OUT/detector" | tee "$OUT/fit.txt"
read -r A B C < <(python -c "import json,sys; d=json.loads(open('$OUT/fit.txt').readline()); print(d['a'], d['b'], d['c'])")
SELECT=("$OUT/ragtruth_dev_select.jsonl" "$OUT/faithjudge_select.jsonl" "$OUT/attributionbench.jsonl")
{ echo "# default (detector alone)"; python -m lab.training.claim_fit measure "${SELECT[@]}" --map 1 0 0
  echo "# candidate (a=$A b=$B c=$C)"; python -m lab.training.claim_fit measure "${SELECT[@]}" --map "$A" "$B" "$C"
} | tee "$OUT/measure.txt"
cp "$RUN/branch/model.safetensors" core/_bundled/nli/model.safetensors
trap 'git checkout -- core/_bundled/nli' EXIT
python -m lab.training.phenomena measure --model "$OUT/detector" --out "$OUT/phenomena.json" | tail -30 | tee "$OUT/phenomena.txt"
