#!/usr/bin/env bash
# issue 48's real-server benchmark, set by set; each resumes where it stopped.
# SHARDS=2 runs each set as two one-thread shards side by side (more from two cores).
cd "$(dirname "$0")/../../.."  # the repository root
shards="${SHARDS:-1}"
threads="${THREADS:-2}"
run_set() {
  for ((k = 0; k < shards; k++)); do
    python benchmarks/bench_claim_checkers.py run "$@" --resume --threads "$threads" \
      --shard "$k" --shards "$shards" &
  done
  wait
}
run_set --set phenomena
run_set --set faithjudge_select --limit 300
run_set --set phenomena --protocol json --limit 200
run_set --set attributionbench --limit 300
run_set --set ragtruth_dev_select --limit 200
