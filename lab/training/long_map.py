"""Candidate 12 of issue 27: a second response map for long answers, decided by its rule.

``lab/records/rag_selection/RULE_candidate12.md`` (committed before any figure of
it): the shipped default map stays for answers of fewer than ``K`` sentences; answers of at
least ``K`` sentences are scored by a length-safe map over the token and word signals,
fitted on the select answers of at least ``K`` sentences (``ResponseCalibration``'s
``long_answers``). The rule sentence floor stays on and reads a sentence alone with the
short map. Figures as for candidate 11 (:func:`lab.training.free_length_map.evaluate`), plus
condition 6: ``benchmarks/bench_heldout.py --per-source 30`` over a copy of the detector
folder per candidate (the weights linked, the candidate's map in its config).

    python -m lab.training.long_map --out lab/records/rag_selection/candidate12.json \
        [--write]
"""

from __future__ import annotations

import dataclasses
import json
import logging
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .free_length_map import decide as candidate11_conditions
from .free_length_map import evaluate, read_sets, value_grid
from .length_safe_map import candidate_args, finish
from .rag_features import ROOT
from .rag_response import Scored, folder_map

log = logging.getLogger("long_map")

STARTS = (3, 4, 6)
HELDOUT_GROUPS = ("all", "multi")


def fit(select: Scored, rows: np.ndarray, shipped: Any, start: int) -> Any:
    """The shipped map with a long map fitted on ``rows`` (a mask) of ``start``+ sentences."""
    from truthlens_integrations._lab_api import fit_response_map

    long_rows = rows & (np.array([s.sentences for s in select.signals]) >= start)
    signals = [s for s, keep in zip(select.signals, long_rows, strict=True) if keep]
    long_map = fit_response_map(signals, select.y[long_rows].astype(bool).tolist())
    return dataclasses.replace(shipped, long_answers=long_map, long_from=start)


def fitted_on(start: int) -> str:
    return (
        f"the folder's default map for answers of fewer than {start} sentences; from {start} "
        "sentences a length-safe map fitted on the ragtruth_dev select split's answers of as "
        "many sentences (ragtruth_dev_split.json); candidate 12 "
        "(lab/training/long_map.py)"
    )


def heldout_aurocs(folder: Path, entries: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Condition 6: bench_heldout's AUROC of ``all`` and ``multi`` per map, in one run.

    Each map (the shipped one too, so every column loads the same way) gets a folder of
    links to ``folder``'s files with the map in its config.
    """
    with tempfile.TemporaryDirectory() as tmp:
        folders = {}
        for name, entry in entries.items():
            copy = Path(tmp) / name.replace("=", "")
            copy.mkdir()
            for path in folder.iterdir():
                if path.name != "config.json":
                    (copy / path.name).symlink_to(path.resolve())
            config = json.loads((folder / "config.json").read_text())
            config["truthlens"]["response_calibration"] = entry
            (copy / "config.json").write_text(json.dumps(config, indent=2))
            folders[name] = copy
        out = Path(tmp) / "heldout.md"
        command = [sys.executable, str(ROOT / "benchmarks" / "bench_heldout.py")]
        command += ["--per-source", "30", "--out", str(out)]
        for copy in folders.values():
            command += ["--folder", str(copy)]
        subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
        return _read_heldout_table(out.read_text(), list(folders))


def _read_heldout_table(text: str, columns: Sequence[str]) -> dict[str, dict[str, float]]:
    """AUROC of each detector column (bundled first, lexical second, then the folders)."""
    order = ["bundled", "lexical", *columns]
    out: dict[str, dict[str, float]] = {name: {} for name in order}
    for line in text.splitlines():
        cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
        if not cells or cells[0] not in HELDOUT_GROUPS:
            continue
        for i, name in enumerate(order):
            out[name][cells[0]] = float(cells[3 + 3 * i + 1])  # AP, AUROC, clean flagged
    return out


def decide(result: dict[str, Any], name: str) -> dict[str, Any]:
    """RULE_candidate12.md's conditions: candidate 11's five, and the held-out benchmark (6)."""
    conditions = {k: v for k, v in candidate11_conditions(result, name).items() if k != "passes"}
    held = result["heldout_auroc"]
    conditions["6_heldout_all_and_multi_at_most_0.02_below"] = all(
        held[name][g] >= held["shipped"][g] - 0.02 for g in HELDOUT_GROUPS
    )
    return {**conditions, "passes": all(conditions.values())}


def main(argv: Sequence[str] | None = None) -> None:
    args = candidate_args(__doc__, argv)
    read = read_sets(args)
    select = read["data"]["select"]
    shipped = folder_map(args.folder)
    rule = "lab/records/rag_selection/RULE_candidate12.md"
    grid = value_grid(rule, "K", STARTS, lambda k, rows: fit(select, rows, shipped, k), fitted_on)
    names = grid.names
    result = evaluate(args, read, grid)
    log.info("held-out benchmark, %d folders", len(names))
    entries = {"shipped": result["shipped_map"], **result["maps"]}
    result["heldout_auroc"] = heldout_aurocs(args.folder, entries)
    result["decision"] = {n: decide(result, n) for n in names}
    finish(result, args, result["maps"])


if __name__ == "__main__":
    main()
