#!/usr/bin/env bash
# Candidate 30 (RULE_candidate30.md) on the lent GPU: the variants, one call.
set -uo pipefail
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/site . 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
R=$PWD; cd /tmp
python3 -m lab.training.gpu_rag train --pack $R/.gpu --init $R/core/_bundled/detector --out $OUT \
  --variant rag:s5:rag:2:5e-5:21 --variant eqa:s5:eqa:2:5e-5:21 \
  --variant eqa_soup:s5:eqa:2:5e-5:21+22+23+24 --variant rag_soup:s5:rag:2:5e-5:21+22+23+24 \
  --variant cont:s6:eqa:1:2e-5:21 2>&1 | grep -v "Loading weights" | tee $OUT/log.txt
ls -la $OUT
