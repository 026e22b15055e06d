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
BRANCH=${BRANCH:-$RUN/branch}
OLD=lab/records/claim_check/signals.jsonl
mkdir -p "$OUT"
[ -f "$BRANCH/model.safetensors" ] || python -m lab.training.finetune_nli export --run "$RUN" --out "$BRANCH"
for set in faithjudge_train_heldout ragtruth_train_heldout ragtruth_dev_select attributionbench faithjudge_select; do
  [ -s "$OUT/$set.jsonl" ] || python -m lab.training.claim_fit signals --set "$set" \
      --branch "$BRANCH" --reuse-detector "$OLD" --out "$OUT/$set.jsonl" > "$OUT/$set.log"
done
rm -rf "$OUT/detector" && cp -r core/_bundled/detector "$OUT/detector"
python -m lab.training.claim_fit fit "$OUT/faithjudge_train_heldout.jsonl" \
    "$OUT/ragtruth_train_heldout.jsonl" --detector "$OUT/detector" | tee "$OUT/fit.txt"
read -r A B C < <(python -c "import json,sys; d=json.loads(open('$OUT/fit.txt').readline()); print(d['a'], d['b'], d['c'])")
SELECT=("$OUT/ragtruth_dev_select.jsonl" "$OUT/faithjudge_select.jsonl" "$OUT/attributionbench.jsonl")
{ echo "# default (detector alone)"; python -m lab.training.claim_fit measure "${SELECT[@]}" --map 1 0 0
  echo "# candidate (a=$A b=$B c=$C)"; python -m lab.training.claim_fit measure "${SELECT[@]}" --map "$A" "$B" "$C"
} | tee "$OUT/measure.txt"
cp "$BRANCH/model.safetensors" core/_bundled/nli/model.safetensors
trap 'git checkout -- core/_bundled/nli' EXIT
# The detector copy read as the bundled one is (evidence strategy, calibrated score): a
# folder name alone would get the window scan and the plain aggregation.
python - "$OUT" <<'PY' | tee "$OUT/phenomena.txt"
import json, sys
from pathlib import Path
from truthlens_integrations import load_detector
from truthlens_integrations.core import DetectionInput
from lab.training.phenomena import summarise
out = Path(sys.argv[1])
items = [json.loads(l) for l in Path("lab/records/phenomena/suite.jsonl").read_text().splitlines() if l]
inputs = [DetectionInput.create(context=i["context"], question=i["question"], answer=i["answer"]) for i in items]
for name, folder in (("default", None), ("candidate", str(out / "detector"))):
    options = {} if folder is None else {"strategy": "evidence", "aggregation": "calibrated"}
    detector = load_detector(folder, **options)
    raw = [r.score for r in detector.detect_batch(inputs)]
    # not checked (no score): counted as not flagged, and counted apart
    scores = [0.0 if s is None else s for s in raw]
    report = summarise(items, scores, 0.5)
    report["not_checked"] = sum(s is None for s in raw)
    (out / f"phenomena_{name}.json").write_text(json.dumps(report, indent=1))
    groups = report["groups"]
    wrong = ("negation", "boolean", "quantifier", "comparative", "negation_flip", "swapped_roles", "restated_number")
    right = ("syntactic_alternation", "syntactic_variation", "correct_restatement")
    caught = sum(groups[g]["caught"] * groups[g]["wrong"] for g in wrong if groups.get(g, {}).get("wrong"))
    n_wrong = sum(groups[g]["wrong"] for g in wrong if g in groups)
    flagged = sum(groups[g]["flagged"] * groups[g]["supported"] for g in right if groups.get(g, {}).get("supported"))
    n_right = sum(groups[g]["supported"] for g in right if g in groups)
    print(name, "not checked", report["not_checked"], "auroc", report["auroc"], "all caught", groups["all"]["caught"], "all flagged", groups["all"]["flagged"],
          "rule-4 wrong caught", round(caught / n_wrong, 3), "rule-4 supported flagged", round(flagged / n_right, 3))
PY
# The branch as the explainer, on SNLI test (eval-only, measure only), installed as above.
truthlens eval --dataset snli --model bundled --precision float32 --out "$OUT/snli" --no-progress \
    | tee "$OUT/snli.txt"
