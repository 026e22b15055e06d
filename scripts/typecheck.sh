#!/usr/bin/env bash
# mypy sees the package as it is installed: the repo keeps core/ and the adapters as
# top-level folders, so link them into one namespace under build/ and check that.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
stage="$root/build/typecheck"
rm -rf "$stage" && mkdir -p "$stage/truthlens_integrations"
for f in "$root"/truthlens_integrations/*; do
  # a checkout may link the three folders in already (an editable worktree): linked below
  case "$(basename "$f")" in core | langchain_adapter | llamaindex_adapter) continue ;; esac
  ln -s "$f" "$stage/truthlens_integrations/"
done
ln -s "$root/core" "$stage/truthlens_integrations/core"
ln -s "$root/langchain_adapter" "$stage/truthlens_integrations/langchain_adapter"
ln -s "$root/llamaindex_adapter" "$stage/truthlens_integrations/llamaindex_adapter"
# Calls the public signatures must reject, each under a `# type: ignore[code]`: with
# warn_unused_ignores, a signature that stops catching its mistake fails this check.
ln -s "$root/tests/typing/check_options.py" "$stage/check_options.py"
cd "$stage"
exec python -m mypy --config-file "$root/pyproject.toml" -p truthlens_integrations \
  -m check_options "$@"
