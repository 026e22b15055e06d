"""Language identification for "is this text in a language the detector reads?": py3langid
against lingua, with the rules of ``core/_language.py``.

Texts: lingua's own test data (``language-testdata`` of pemistahl/lingua-py: sentences,
word pairs and single words in 75 languages; ``--per-language`` of each, five times as many
English), and real English from the shared benchmark data: HaluEval QA answers (short:
names, dates) and knowledge passages, RAGTruth answers and passages (QA, summaries, and
data-to-text records in JSON). The question asked of each text is the product's: English
(read) or not. Reported per group: English called foreign (the answer goes unchecked) and
foreign called English (scored by a model that cannot read it), load time, ms per text.

The rules (``core/_language.py``): a Latin-script text with fewer than 12 letters outside
capitalised words is read; otherwise it is foreign when the identifier's top language is not
read, the read languages hold at most 5% and the top one at least 20%. Text mostly in
another script is foreign when its top language is not read. py3langid's ``zxx`` (no
language) and ``pcm`` (English-based pidgin) count as read; lingua has neither.

    python benchmarks/bench_language_id.py --testdata /path/to/language-testdata [--lingua]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

DATA = Path("/work/shared/benchdata")
CAPITALISED = re.compile(r"\b[^\W\d_]+")


def texts(testdata: Path, per_language: int) -> list[tuple[str, str, str]]:
    rng = random.Random(0)
    out: list[tuple[str, str, str]] = []
    for kind in ("sentences", "word-pairs", "single-words"):
        for path in sorted((testdata / kind).glob("*.txt")):
            lines = [line.strip() for line in path.read_text().splitlines() if line.strip()]
            rng.shuffle(lines)
            k = per_language * (5 if path.stem == "en" else 1)
            out += [(kind, path.stem, line) for line in lines[:k]]
    qa = [json.loads(line) for line in (DATA / "halueval/dataset_halueval_qa.jsonl").open()][:2000]
    rng.shuffle(qa)
    for row in qa[:1000]:
        out += [("HaluEval answers", "en", row["right_answer"])]
        out += [("HaluEval answers", "en", row["hallucinated_answer"])]
    out += [("HaluEval knowledge", "en", row["knowledge"]) for row in qa[:300]]
    for name in ("qa", "summary", "data2txt"):
        for line in (DATA / f"ragtruth_dev/ragtruth_dev_{name}.jsonl").open():
            row = json.loads(line)
            out += [("RAGTruth answers", "en", r["response"]) for r in row["responses"]]
            source = row["source"]
            text = source.get("passages") if isinstance(source, dict) else source
            if not isinstance(text, str):
                text = json.dumps(source, ensure_ascii=False)
            parts = re.split(r"passage \d+:", text)
            out += [("RAGTruth passages", "en", p.strip()) for p in parts if p.strip()]
    return out


def lingua_rule(detector: object, text: str) -> bool:
    """The product's rule with lingua's confidences (English is the one language read)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return False
    latin = 2 * sum(unicodedata.name(c, "").startswith("LATIN") for c in letters) >= len(letters)
    lower = sum(len(w) for w in CAPITALISED.findall(text) if not w[0].isupper())
    if latin and lower < 12:
        return False
    values = detector.compute_language_confidence_values(text)  # type: ignore[attr-defined]
    if not values or values[0].value == 0:
        return False
    top = values[0].language.iso_code_639_1.name.lower()
    english = next((v.value for v in values if v.language.iso_code_639_1.name == "EN"), 0.0)
    if top == "en":
        return False
    return True if not latin else english <= 0.05 and values[0].value >= 0.2


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--testdata", type=Path, required=True)
    parser.add_argument("--per-language", type=int, default=100)
    parser.add_argument("--lingua", action="store_true", help="also lingua (low and high accuracy)")
    args = parser.parse_args()
    rows = texts(args.testdata, args.per_language)
    print(f"{len(rows):,} texts")
    from truthlens_integrations._lab_api import language_module as _language

    started = time.perf_counter()
    _language._identifier()
    deciders = {
        "py3langid (product rules)": lambda t: _language.text_language(t, ("en",)) is not None
    }
    loads = {"py3langid (product rules)": time.perf_counter() - started}
    if args.lingua:
        from lingua import LanguageDetectorBuilder

        for mode in ("low", "high"):
            started = time.perf_counter()
            builder = LanguageDetectorBuilder.from_all_languages()
            detector = (builder.with_low_accuracy_mode() if mode == "low" else builder).build()
            detector.detect_language_of("warm up")
            name = f"lingua 2, {mode} accuracy, 75 languages"
            loads[name] = time.perf_counter() - started
            deciders[name] = lambda t, d=detector: lingua_rule(d, t)
    for name, foreign in deciders.items():
        wrong: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        started = time.perf_counter()
        for group, gold, text in rows:
            said = foreign(text)
            key = f"{'English' if gold == 'en' else 'other'}: {group}"
            wrong[key][0] += said if gold == "en" else not said
            wrong[key][1] += 1
        per_text = (time.perf_counter() - started) / len(rows) * 1000
        print(f"\n{name}: load {loads[name]:.2f} s, {per_text:.2f} ms per text")
        for key, (bad, total) in sorted(wrong.items()):
            what = "called foreign" if key.startswith("English") else "called English"
            print(f"  {key:40} {what}: {bad:5,} of {total:6,} ({100 * bad / total:.2f}%)")


if __name__ == "__main__":
    main()
