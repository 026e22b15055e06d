"""Write ``core/_calibration/planted.json``: wrong answers as the bundled detector read them.

Every calibration file must still flag these answers at its own threshold
(``core/_calibration/_planted.py``). The check runs the file's map alone, so what the
bundled detector reads of each answer is stored: its token probabilities (float32, the
reference precision), the words the context lacks, the rules' conflicts. Rerun when the
bundled detector changes; ``tests/unit/core/calibration/test_planted.py`` fails until then.

    python -m lab.training.planted [--check]
"""

from __future__ import annotations

import argparse
import json
import sys

from truthlens_integrations._lab_api import answer_evidence
from truthlens_integrations.core import DetectionInput
from truthlens_integrations.core.models import load_detector


def rows() -> list[dict[str, object]]:
    from truthlens_integrations._lab_api import PLANTED

    detector = load_detector(dtype="float32", backend="torch")
    out = []
    for context, answer in PLANTED:
        item = DetectionInput.create(context=list(context), question=None, answer=answer)
        result = detector.detect(context=list(context), question=None, answer=answer)
        absent, marks = answer_evidence(item)
        out.append(
            {
                "answer": answer,
                "tokens": [[t.start, t.end, round(t.probability, 6)] for t in result.tokens],
                "absent": [[a, k] for a, k in absent],
                "marks": [list(marks[0]), list(marks[1])],
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    from truthlens_integrations._lab_api import PLANTED_FILE

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="compare with the file, write nothing")
    args = p.parse_args(argv)
    text = "[\n" + ",\n".join(json.dumps(row) for row in rows()) + "\n]\n"
    if args.check:
        same = PLANTED_FILE.is_file() and PLANTED_FILE.read_text(encoding="utf-8") == text
        print("same" if same else f"{PLANTED_FILE} differs")
        return 0 if same else 1
    PLANTED_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {PLANTED_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
