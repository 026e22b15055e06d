#!/usr/bin/env bash
# Move large tracked files out of the checkout before a call to a lent GPU machine, and back.
#
# Only 64 MiB of the working tree travel to that machine, and the tracked tree is larger
# (the bundled weights, the benchmark reports, the committed training data). The GPU jobs
# (lab.training.gpu_student, lab.training.gpu_teacher) read their rows from a carried .gpu/ folder
# and need none of these:
#
#   bash scripts/device_slim.sh aside [--weights]   # --weights: the detector's weights too
#   ... the device call ...
#   bash scripts/device_slim.sh restore
#
# The files wait in $TRUTHLENS_ASIDE (default /tmp/truthlens-aside). "aside" refuses to
# run while anything waits there; "restore" refuses to overwrite a path that came back.
set -euo pipefail
cd "$(dirname "$0")/.."
aside="${TRUTHLENS_ASIDE:-/tmp/truthlens-aside}"
paths=(benchmarks/results lab/records lab/training/data core/_bundled/nli)

case "${1:-}" in
aside)
  if [ -e "$aside" ]; then
    echo "device_slim: $aside exists; run 'restore' first" >&2
    exit 1
  fi
  [ "${2:-}" = "--weights" ] && paths+=(core/_bundled/detector/model.safetensors)
  for p in "${paths[@]}"; do
    mkdir -p "$aside/$(dirname "$p")"
    mv "$p" "$aside/$p"
  done
  echo "device_slim: moved ${paths[*]} to $aside"
  # what travels: tracked and untracked files git does not ignore, plus carried folders
  # (the files just moved are still listed as tracked: stat skips them)
  bytes=$(git ls-files -co --exclude-standard -z | xargs -0 stat -c %s 2>/dev/null |
    awk '{s += $1} END {print s + 0}' || true)
  awk -v b="$bytes" 'BEGIN {printf "device_slim: %.1f MiB left in the tree (carried folders come on top)\n", b / 1048576}'
  ;;
restore)
  if [ ! -d "$aside" ]; then
    echo "device_slim: nothing in $aside" >&2
    exit 1
  fi
  # check every file first, so a conflict moves nothing
  while IFS= read -r -d '' f; do
    p="${f#"$aside"/}"
    if [ -e "$p" ]; then
      echo "device_slim: $p exists in the checkout; merge it by hand from $aside" >&2
      exit 1
    fi
  done < <(find "$aside" -type f -print0)
  while IFS= read -r -d '' f; do
    p="${f#"$aside"/}"
    mkdir -p "$(dirname "$p")"
    mv "$f" "$p"
  done < <(find "$aside" -type f -print0)
  rm -r "$aside"
  echo "device_slim: restored"
  git status --short
  ;;
*)
  echo "usage: bash scripts/device_slim.sh aside [--weights] | restore" >&2
  exit 2
  ;;
esac
