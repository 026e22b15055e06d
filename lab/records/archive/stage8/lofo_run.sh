#!/usr/bin/env bash
# Leave one natural family out (lab.training.gpu_student lofo); see benchmarks/results/stage8/RULE.md.
# Run from the repository root there, with .gpu/rows.pkl.gz (gpu_student pack), .gpu/base
# (gpu_student base) and .whl/ carried (gpu_run.sh says which wheels); benchmarks/results,
# lab/training/data, core/_bundled/nli and the detector's model.safetensors were moved aside to fit
# 64 MiB (now: bash scripts/device_slim.sh aside --weights, then restore). One NVIDIA H200: 10 students in 322 s of wall time.
set -uo pipefail
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/site . 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
R=$PWD; cd /tmp  # not the repository root: its truthlens_integrations/ would shadow /tmp/site
python3 -m lab.training.gpu_student lofo --rows $R/.gpu/rows.pkl.gz --init $R/.gpu/base --out $OUT \
  --family summaries --family begin --family faithdial --family xsumfaith --family factcheck_gpt \
  --variant labels:0:1:0 --variant t2:1:2:0 --passes 0.4 2>&1 \
  | grep -v -E "Loading weights|LOAD REPORT|^Key|^-|pooler|classifier|^Notes|UNEXPECTED|MISSING|^$" | tee $OUT/log.txt
