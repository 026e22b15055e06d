"""Paths the tests read, the same wherever a test file sits under ``tests/``."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
DATA = TESTS / "data"
BENCHDATA = DATA / "eval" / "benchdata"
RAGTRUTH = BENCHDATA / "ragtruth_subsets" / "ragtruth_test_subset_with_context.jsonl"
# the cookbook's policy files
POLICIES = REPO / "cookbook" / "policies"
GLOBAL = POLICIES / "truthlens_global.yaml"
DECISIONS = POLICIES / "truthlens_decisions.yaml"
HALUGATE_DECISION = POLICIES / "halugate_decision.yaml"
HALUGATE_FULL = POLICIES / "halugate_full.yaml"
