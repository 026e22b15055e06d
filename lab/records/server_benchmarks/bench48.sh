#!/usr/bin/env bash
# issue 48's real-server benchmark, set by set; each resumes where it stopped
cd "$(dirname "$0")/../../.."  # the repository root
python benchmarks/bench_claim_checkers.py run --set phenomena --resume --threads "${THREADS:-2}"
python benchmarks/bench_claim_checkers.py run --set faithjudge_select --limit 300 --resume --threads "${THREADS:-2}"
python benchmarks/bench_claim_checkers.py run --set attributionbench --limit 300 --resume --threads "${THREADS:-2}"
python benchmarks/bench_claim_checkers.py run --set ragtruth_dev_select --limit 200 --resume --threads "${THREADS:-2}"
python benchmarks/bench_claim_checkers.py run --set phenomena --protocol json --limit 200 --resume --threads "${THREADS:-2}"
