#!/usr/bin/env bash
# Issue 41's learned check on a lent GPU: the NLI branch trained on every packed pair, at two
# depths. Prepared on the CPU (2026-11-28, no GPU lent); see lab/training/README.md, "A
# deeper NLI branch on a lent GPU". Run from the repository root there, with carried:
#   .gpu/nli_pairs.pt.gz  python -m lab.training.train_nli --curriculum-per-task 12000 \
#                           --faithjudge-repeat 1 --real-repeat 1 --real-balanced \
#                           --max-length 256 --pack .gpu/nli_pairs.pt.gz   (13.6 MB, 45 s)
#   .whl/                 pydantic, pydantic-core, annotated-types, typing-inspection
#                         for Python 3.12 (the device image has no pydantic)
# after `bash scripts/device_slim.sh aside` (the tracked tree is then 47.5 MiB: only 64 MiB
# travel). It writes to $OUT, at most 8 files of at most 16 MiB: each depth's log and
# training_metrics.json, the 3-layer branch whole (11 MB), the 6-layer one in two parts
# (`cat part_* > model.safetensors`).
#
# Here, a smoke run on the CPU: DEVICE=cpu QUICK=--quick OUT=/tmp/nli-smoke bash lab/training/gpu_nli_run.sh
set -uo pipefail
DEVICE="${DEVICE:-cuda}"
QUICK="${QUICK:-}"
[ "$DEVICE" = cuda ] && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/site . 2>&1 | tail -2
  export PYTHONPATH=/tmp/site:$PWD
fi
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT"
for k in 3 0; do
  # 3 shared layers: the shipped branch's shape (fits the 60 MB budget as it is);
  # 0: all six layers trained, the ceiling (21.6 MB: int8 storage would be needed to ship it)
  # both start from the detector's own layers (core/_bundled/nli is moved aside to fit)
  python3 -m lab.training.train_nli --packed .gpu/nli_pairs.pt.gz --shared-layers "$k" \
    --epochs 3 --batch 64 --lr 5e-5 --device "$DEVICE" --seed 41 $QUICK --out "$OUT/k$k" 2>&1 |
    grep -v "Loading weights" | tee "$OUT/k$k.log"
  rm -f "$OUT/k$k/README.md"  # the card is rebuilt here from training_metrics.json
done
if [ -f "$OUT/k0/model.safetensors" ]; then
  split -b 15m "$OUT/k0/model.safetensors" "$OUT/k0/part_" && rm "$OUT/k0/model.safetensors"
fi
ls -la "$OUT" "$OUT"/k*
