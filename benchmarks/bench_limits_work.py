"""What an answer at the character limit costs the detector, by how many sentences it has.

The issue's case: two 12,000-character answers of short claims in one request (the
service's ``/v1/detect`` runs them as one batch). Beside it: 12,000 characters of prose
(RAGTruth answers), and numbered items. Each is timed ``--repeats`` times (the minimum is
reported: the machine is shared), with the bundled detector. Run with the interpreter of
each branch to compare.

    python benchmarks/bench_limits_work.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from truthlens_integrations._lab_api import sentence_count
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models.detection import load_detector

CONTEXT = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was built from 1887 to "
    "1889 and is 330 metres tall. It was designed by Gustave Eiffel's company."
]
CLAIMS = ["It is tall.", "It is 330 m.", "It is in Paris.", "It was built in 1889.", "It is iron."]
RAGTRUTH = Path("/work/shared/benchdata/ragtruth_dev/ragtruth_dev_qa.jsonl")


def at_limit(parts: list[str], limit: int = 12_000) -> str:
    text, n = "", 0
    while len(text) + len(parts[n % len(parts)]) + 1 <= limit:
        text += parts[n % len(parts)] + " "
        n += 1
    return text.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    detector = load_detector()
    detector.detect_batch([DetectionInput.create(context=CONTEXT, question=None, answer="Hi.")])
    prose = at_limit([json.loads(line)["responses"][0]["response"] for line in RAGTRUTH.open()])
    claims = at_limit(CLAIMS)
    cases = {
        "two answers of short claims (the issue)": [claims, claims.replace("tall", "high")],
        "one answer of short claims": [claims],
        "one answer of prose": [prose],
        "one answer of numbered items": [at_limit([f"{n}." for n in range(1, 3000)])],
    }
    for name, answers in cases.items():
        items = [DetectionInput.create(context=CONTEXT, question=None, answer=a) for a in answers]
        best = min(_timed(detector, items) for _ in range(args.repeats))
        sentences = sum(sentence_count(a) for a in answers)
        print(
            f"{name}: {sum(len(a) for a in answers):,} characters, {sentences:,} sentences, "
            f"{best:.2f} s"
        )


def _timed(detector: object, items: list[DetectionInput]) -> float:
    started = time.perf_counter()
    detector.detect_batch(items)  # type: ignore[attr-defined]
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
