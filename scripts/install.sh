#!/usr/bin/env bash
# Install truthlens-integrations (editable) with every extra, fast and offline-friendly.
#   bash scripts/install.sh        # runtime: core + LangChain + LlamaIndex + observability
#   bash scripts/install.sh dev    # the same plus test and lint tooling
# torch is pinned to the CPU build first: an unpinned torch would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="all"
[ "${1:-}" = "dev" ] && extras="all,dev"
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[${extras}]"
