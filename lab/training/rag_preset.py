"""Write candidate 4a's response map as a calibration file ``rag.json`` (issue 27).

Candidate 4a (``lab/records/rag_selection/RULE_candidate4.md``: the length-safe map
over the token and word signals and the unit and negation rules' conflict counts) failed
condition 4 of the selection rule (hard-case AUROC 0.809 against the shipped 0.897), so it
is **not** the default; it shipped as an opt-in calibration (``calibration: rag``) until
issue 52 removed bundled calibrations, and the file is kept with the records. The map is
the one ``lab.training.rag_response`` computes as the map that would ship:
:func:`lab.training.rag_response.fit_candidate` on all 85 select sources of ``ragtruth_dev``
(the cached detector outputs of ``lab.training.rag_features``), nothing refitted or tuned
here. Its threshold is the file format's required field, set to the default 0.5
(the map is calibrated: ECE 0.046 on the select split, cross-fitted). The select-role
figures are copied from the selection run's JSON (``--figures``) as the file's provenance.

    python -m lab.training.rag_preset --check   # exits 1 if the bundled file differs
    python -m lab.training.rag_preset           # (re)writes it
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .rag_features import ROOT
from .rag_response import fit_candidate, fitted_on, load_set

CANDIDATE = "rules"  # candidate 4a's name in rag_response
# Shipped as the opt-in calibration `rag` until issue 52 (no bundled calibrations since;
# issue 41 found it misses single-claim errors): kept with the records.
BUNDLED = ROOT / "lab" / "records" / "rag_selection" / "rag_calibration.json"
# the figures of the bundled detector now in place (stage 6); stage 5's are one folder up
FIGURES = ROOT / "lab" / "records" / "rag_selection" / "stage6" / "crossfit_detector.json"
COMMAND = (
    "python -m lab.training.rag_features --dataset ragtruth_dev_select; "
    "python -m lab.training.rag_preset"
)


def provenance(figures: dict[str, Any], source: Path = FIGURES) -> dict[str, Any]:
    """The select-role figures of candidate 4a and the shipped map, from the selection run."""
    select = figures["select_crossfitted"]
    faith = figures["faithjudge_select_crossfitted"]
    bench = figures["attributionbench"]

    def row(name: str) -> dict[str, Any]:
        return {
            "select_split_crossfitted": {
                k: select[name][k] for k in ("auroc", "ap", "ece", "clean_flagged")
            },
            "attributionbench_auroc": bench[name]["auroc"],
            "faithjudge_select_auroc": faith[name]["auroc"],
            "faithjudge_select_consistent_flagged": faith[name]["clean_flagged"],
            "hard_cases_auroc": figures["hard_cases_auroc"].get(name),
        }

    return {
        "candidate": "4a (lab/records/rag_selection/RULE_candidate4.md)",
        "decision": "not the default: fails the selection rule's condition 4 (hard-case "
        "AUROC at most 0.02 below the shipped map's); opt in with calibration: rag",
        "data": "ragtruth_dev select split (502 answers, 85 sources, "
        "ragtruth_dev_split.json), the bundled detector's tokens and the "
        "unit and negation rules' conflict counts",
        "command": COMMAND,
        "figures": source.resolve().relative_to(ROOT).as_posix(),
        "this_map": row(CANDIDATE),
        "shipped_map": row("shipped"),
        "lexical_reference": {
            "select_split_auroc": select["lexical"]["auroc"],
            "attributionbench_auroc": bench["lexical"]["auroc"],
        },
        "padding_eiffel_0_10_20": figures["padding"][CANDIDATE],
    }


def build(folder: Path, figures: dict[str, Any], source: Path = FIGURES) -> dict[str, Any]:
    """The calibration file's contents: 4a refitted on all select sources, threshold 0.5."""
    from truthlens_integrations._lab_api import CALIBRATION_FORMAT

    select = load_set(folder, "ragtruth_dev_select")
    fitted = fit_candidate(CANDIDATE, select.signals, select.y)
    entry = fitted.to_config(fitted_on(CANDIDATE))
    if entry != figures["maps"][CANDIDATE]:
        raise SystemExit(f"the refitted map differs from {source}'s: {entry}")
    return {
        "format": CALIBRATION_FORMAT,
        "model": "bundled",
        "response_calibration": entry,
        "threshold": 0.5,
        "token_threshold": 0.5,
        "target": {},
        "metrics": provenance(figures, source),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=ROOT / "core" / "_bundled" / "detector")
    parser.add_argument("--figures", type=Path, default=FIGURES)
    parser.add_argument("--out", type=Path, default=BUNDLED)
    parser.add_argument("--check", action="store_true", help="compare with --out, write nothing")
    args = parser.parse_args(argv)
    content = build(args.folder, json.loads(args.figures.read_text()), args.figures)
    text = json.dumps(content, indent=1) + "\n"
    if args.check:
        same = args.out.is_file() and args.out.read_text() == text
        print("same" if same else f"{args.out} differs")
        raise SystemExit(0 if same else 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
