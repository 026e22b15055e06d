"""The fixed split of ``ragtruth_dev/`` by source: a training part and a selection part.

``ragtruth_dev/`` (train role) holds RAGTruth responses from 185 sources that the eval-only
subset does not share. Responses to one source share its passages, so the split is by
``source_id``: 55% of each task type's sources train weights, 45% are kept for choosing
candidates and calibrating (the MANIFEST asks for at least 40%). The split is drawn once
with a fixed seed and committed (``ragtruth_dev_split.json``) so every
figure says which sources it used.

    python -m lab.training.ragtruth_dev split   # rewrites the committed file (same seed and split)
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "benchdata" / "ragtruth_dev"
SPLIT_FILE = ROOT / "truthlens_integrations" / "evaluation" / "ragtruth_dev_split.json"
TASKS = {"qa": "QA", "summary": "Summary", "data2txt": "Data2txt"}
SEED = 20261126
SELECT_SHARE = 0.45


def source_ids(data: Path = DATA) -> dict[str, list[int]]:
    """Each task type's source ids, in file order."""
    found: dict[str, list[int]] = {}
    for stem, task in TASKS.items():
        path = data / f"ragtruth_dev_{stem}.jsonl"
        with path.open(encoding="utf-8") as handle:
            found[task] = [json.loads(line)["source_id"] for line in handle if line.strip()]
    return found


def draw_split(data: Path = DATA, seed: int = SEED) -> dict[str, object]:
    """Draw the split: per task type, a seeded shuffle, the first 45% (rounded up) select."""
    rng = random.Random(seed)
    train: list[int] = []
    select: list[int] = []
    for ids in source_ids(data).values():
        shuffled = sorted(ids)
        rng.shuffle(shuffled)
        cut = -(-len(shuffled) * 45 // 100)
        select.extend(shuffled[:cut])
        train.extend(shuffled[cut:])
    return {
        "seed": seed,
        "select_share": SELECT_SHARE,
        "train": sorted(train),
        "select": sorted(select),
    }


def load_split(path: Path = SPLIT_FILE) -> dict[str, set[int]]:
    """The committed split as two sets of source ids."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {"train": set(raw["train"]), "select": set(raw["select"])}


def main(argv: list[str]) -> int:
    if argv != ["split"]:
        print("usage: python -m lab.training.ragtruth_dev split", file=sys.stderr)
        return 2
    split = draw_split()
    SPLIT_FILE.write_text(json.dumps(split, indent=1) + "\n", encoding="utf-8")
    print(f"{len(split['train'])} train sources, {len(split['select'])} select -> {SPLIT_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
