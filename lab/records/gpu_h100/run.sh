#!/usr/bin/env bash
# GPU check of the runtime: device choice, latency, eval-only figures in bf16.
set -uo pipefail
R=$PWD
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --target /tmp/site . 2>&1 | tail -2
export PYTHONPATH=/tmp/site TRUTHLENS_BENCHDATA=$R/.gpu/benchdata PYTHONUNBUFFERED=1
cd /tmp
python3 -c "
import torch, transformers
from truthlens_integrations.core.models.detection import load_detector
d = load_detector(); print('auto device', d.device, d._loaded.model.dtype, 'torch', torch.__version__, 'transformers', transformers.__version__)
r = d.detect(context=['The Eiffel Tower was built from 1887 to 1889.'], question='When was it built?', answer='It was built in 1950.')
print(r.score, r.detected, [s.text for s in r.spans])
" || exit 1
python3 $R/benchmarks/bench_evidence.py --dtype bfloat16 --out $OUT/detector_evidence_h100_bf16.md 2>&1 | grep -v Loading
python3 $R/benchmarks/bench_evidence.py --dtype float32 --contexts 1000 8000 --out $OUT/detector_evidence_h100_fp32.md 2>&1 | grep -v Loading
for ds in ragtruth faithbench wice; do
  /tmp/site/bin/truthlens eval --dataset $ds --out /tmp/ev --no-progress 2>&1 | grep -v Loading | tail -3
  cp /tmp/ev/${ds}_*.md $OUT/
done
cp /tmp/ev/ragtruth_truthlens-bundled-detector.json $OUT/
ls -la $OUT
