#!/usr/bin/env bash
# Stage-8 candidates on the lent GPU (lab.training.gpu_student train); see benchmarks/results/stage8/RULE.md.
# Run from the repository root there, with .gpu/rows.pkl.gz (python -m lab.training.gpu_student pack)
# and .whl/ (pydantic, pydantic-core, annotated-types, typing-inspection for Python 3.12) carried;
# benchmarks/results, lab/training/data and core/_bundled/nli were moved aside to fit 64 MiB
# (now: bash scripts/device_slim.sh aside, then restore after the call).
# One NVIDIA H200: 4 variants in 292 s of wall time.
set -uo pipefail
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/site . 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
R=$PWD; cd /tmp  # not the repository root: its truthlens_integrations/ would shadow /tmp/site
python3 -m lab.training.gpu_student train --rows $R/.gpu/rows.pkl.gz --out $OUT \
  --variant t1:1:1:0 --variant t2:1:2:0 --variant t2w2:2:2:0 --variant t2rm:1:2:2 2>&1 \
  | grep -v "Loading weights" | tee $OUT/log.txt
ls -la $OUT
