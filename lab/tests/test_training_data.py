"""The training-data generators: labels must mark exactly the text they claim to mark."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # lab/training/ is a repo folder, not an installed package
    sys.path.insert(0, str(ROOT))

from lab.training import data, data2txt, spans  # noqa: E402

BUNDLED = ROOT / "core" / "_bundled" / "detector"
SENTENCE = "The tower was built in 1889 and is 330 meters tall, in Paris."


def _outside(text: str, span: tuple[int, int]) -> tuple[str, str]:
    return text[: span[0]], text[span[1] :]


@pytest.mark.parametrize("seed", range(20))
def test_changed_number_is_exactly_the_span(seed: int) -> None:
    done = spans.change_number(SENTENCE, random.Random(seed))
    assert done is not None
    out, (span,) = done
    new = out[span[0] : span[1]]
    assert re.fullmatch(r"[\d,.]+", new)
    before, after = _outside(out, span)
    # putting an original number back at the span restores the sentence
    assert any(before + old + after == SENTENCE for old in ("1889", "330"))
    assert new not in ("1889", "330")


def test_unit_month_and_entity_swaps_mark_the_new_words() -> None:
    rng = random.Random(0)
    out, (span,) = spans.change_unit(SENTENCE, rng)  # type: ignore[misc]
    assert out[span[0] : span[1]] == "feet"
    assert out.replace("feet", "meters") == SENTENCE

    dated = "She was born on 2 March 1990 in Lyon."
    out, (span,) = spans.change_month(dated, rng)  # type: ignore[misc]
    before, after = _outside(out, span)
    assert before + "March" + after == dated
    assert out[span[0] : span[1]] in spans._MONTHS
    assert out[span[0] : span[1]] != "March"

    sentence = "Gustave Eiffel designed the tower for the World Fair."
    out, (span,) = spans.swap_entity(sentence, ["Le Corbusier", "Gustave Eiffel"], rng)  # type: ignore[misc]
    assert out[span[0] : span[1]] == "Le Corbusier"
    before, after = _outside(out, span)
    assert any(before + old + after == sentence for old in spans.entities(sentence))


def test_negation_flips_mark_the_changed_word() -> None:
    rng = random.Random(1)
    out, (span,) = spans.flip_negation("The bridge was opened in 1932.", rng)  # type: ignore[misc]
    assert out == "The bridge was not opened in 1932."
    assert out[span[0] : span[1]] == "not"
    out, (span,) = spans.flip_negation("The bridge was not opened in 1932.", rng)  # type: ignore[misc]
    assert out == "The bridge was opened in 1932."
    assert out[span[0] : span[1]] == "was"


def test_paraphrase_keeps_every_number_and_adds_nothing() -> None:
    text = "Roughly 2400 people attended, approximately 12 percent more than in 1998."
    for seed in range(30):
        out = spans.paraphrase(text, random.Random(seed))
        assert [n.replace(",", "") for n in re.findall(r"[\d,]+\d", out)] == ["2400", "12", "1998"]
    assert "about 2,400" in {
        spans.paraphrase("roughly 2400 people", random.Random(s)) for s in range(40)
    } or any("2,400" in spans.paraphrase("Roughly 2400", random.Random(s)) for s in range(40))


CONTEXT = [
    "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
    "It was designed by the company of Gustave Eiffel and built from 1887 to 1889.",
    "The tower is 330 meters tall and was the tallest structure in the world until 1930.",
    "About 7 million people visit it every year.",
    "Its design was criticised by some of France's leading artists.",
]
OTHER = ["The Amazon river flows through Brazil, Peru and Colombia."]


def test_synthetic_examples_label_exactly_the_unsupported_text() -> None:
    kinds = set()
    for seed in range(400):
        ex = spans.synthesize(CONTEXT, "Tell me about the tower.", OTHER, random.Random(seed))
        assert ex is not None
        kinds.add(ex.kind)
        ctx = ex.context[0]
        for s, e in ex.spans:
            assert 0 <= s < e <= len(ex.answer)
            marked = ex.answer[s:e]
            assert marked == marked.strip() and marked
        if ex.kind in ("added", "borrowed"):
            ((s, e),) = ex.spans
            added = ex.answer[s:e]
            assert added in CONTEXT + OTHER
            assert added not in ctx  # an addition is never in what the model sees
            assert ex.answer.count(added) == 1
        elif ex.kind == "clean":
            assert ex.spans == []
            numbers = {n.replace(",", "") for n in re.findall(r"\d[\d,]*", ex.answer)}
            assert numbers <= set(re.findall(r"\d+", ctx))
        else:
            assert len(ex.spans) == 1
    assert {"clean", "added", "borrowed", "number", "entity"} <= kinds


LONG_CONTEXT = [
    *CONTEXT,
    "The tower has three levels for visitors, with restaurants on the first and second.",
    "Tickets can be bought to ascend by stairs or lift to the first and second levels.",
    "The top level's upper platform is 276 meters above the ground.",
]


def test_long_answers_label_exactly_the_unsupported_text() -> None:
    kinds: set[str] = set()
    for seed in range(300):
        ex = spans.synthesize_long(LONG_CONTEXT, None, OTHER, random.Random(seed))
        assert ex is not None
        kinds.update(ex.kind.removeprefix("long_").split("+"))
        ctx = ex.context[0]
        assert len(spans.split_sentences(ex.answer)) >= 4
        for s, e in ex.spans:
            marked = ex.answer[s:e]
            assert marked == marked.strip() and marked
            if ex.kind in ("long_added", "long_borrowed"):
                assert marked not in ctx  # an added sentence is never what the model sees
        if ex.kind == "long_clean":
            assert ex.spans == []
            # every sentence of a clean answer restates a context sentence's numbers
            numbers = {n.replace(",", "") for n in re.findall(r"\d[\d,]*", ex.answer)}
            assert numbers <= set(re.findall(r"\d+", ctx))
        else:
            assert len(ex.spans) >= 1
    assert {"clean", "added", "borrowed", "entity"} <= kinds


def test_short_contexts_give_no_long_answer() -> None:
    assert spans.synthesize_long(CONTEXT[:4], None, OTHER, random.Random(0)) is None


@pytest.mark.parametrize("seed", range(60))
def test_data2txt_labels_mark_values_the_record_lacks(seed: int) -> None:
    ex = data2txt.make_example(random.Random(seed))
    record = ex.context[0]
    if ex.kind == "data2txt_clean":
        assert ex.spans == []
    for s, e in ex.spans:
        marked = ex.answer[s:e]
        assert marked and marked == marked.strip()
        if marked[0].isupper() and marked.endswith("."):
            continue  # an added claim sentence
        if re.fullmatch(r"[\d.]+", marked):
            # wrong star ratings / review counts are values the record does not hold there
            assert f'"{marked}' not in record or "review_count" in record
        else:
            assert marked.lower() not in record.lower() or ":00" in marked


def test_clean_data2txt_values_come_from_the_record() -> None:
    for seed in range(40):
        ex = data2txt.make_example(random.Random(seed))
        if ex.spans:
            continue
        city = re.search(r"located in ([A-Z][\w ]+),", ex.answer)
        assert city and city.group(1) in ex.context[0]
        stars = re.search(r"rating of ([\d.]+) stars based on (\d+) reviews", ex.answer)
        assert stars and stars.group(1) in ex.context[0] and stars.group(2) in ex.context[0]


def test_unsupported_spans_mark_words_missing_from_the_references() -> None:
    answer = "The Oberoi family's hotel company is based in Mumbai."
    got = data.unsupported_spans(answer, ["The Oberoi Group has its head office in Delhi."])
    marked = [answer[s:e] for s, e in got]
    assert "Mumbai" in marked[-1]
    assert all("Oberoi" not in m for m in marked)
    assert data.unsupported_spans("Delhi", ["head office in Delhi"]) == []


def test_token_labels_follow_character_spans() -> None:
    # [CLS] p p [SEP] a0 a1 a2 [SEP]; answer "in 1950 ." with span over "1950"
    seq_ids = [None, 0, 0, None, 1, 1, 1, None]
    offsets = [(0, 0), (0, 5), (6, 9), (0, 0), (0, 2), (3, 7), (8, 9), (0, 0)]
    assert data.token_labels(seq_ids, offsets, [(3, 7)]) == [-100, -100, -100, -100, 0, 1, 0, -100]
    assert data.token_labels(seq_ids, offsets, []) == [-100, -100, -100, -100, 0, 0, 0, -100]


def test_eval_only_data_cannot_be_opened() -> None:
    for parts in (
        ("ragtruth_subsets", "x.jsonl"),
        ("faithbench", "FaithBench.csv"),
        ("esnli", "s1.test"),
    ):
        with pytest.raises(PermissionError):
            data._path(*parts)


def test_heldout_split_is_the_last_tenth() -> None:
    assert data.split_of(8999, 10000) == "train"
    assert data.split_of(9000, 10000) == "heldout"


@pytest.mark.skipif(not (BUNDLED / "tokenizer.json").is_file(), reason="bundled tokenizer absent")
def test_real_tokenizer_labels_only_the_marked_answer_tokens() -> None:
    from transformers import AutoTokenizer

    from truthlens_integrations._lab_api import format_prompt

    tok = AutoTokenizer.from_pretrained(str(BUNDLED))
    answer = "The tower was built in 1950 and is 500 meters tall."
    s = answer.index("1950")
    ex = spans.SpanExample(CONTEXT, "When was it built?", answer, [(s, s + 4)])
    enc = data.encode_detection(tok, ex, 512, format_prompt)
    ids, labels = enc["input_ids"], enc["labels"]
    marked = [tok.convert_ids_to_tokens(i) for i, y in zip(ids, labels, strict=True) if y == 1]
    assert marked == ["1950"]
    answer_tokens = [i for i, y in zip(ids, labels, strict=True) if y != -100]
    assert tok.decode(answer_tokens) == answer.lower()
    # the prompt is cut, never the answer
    short = data.encode_detection(tok, ex, 40, format_prompt)
    assert len(short["input_ids"]) == 40
    assert short["truncated"] and not enc["truncated"]
    assert sum(1 for y in short["labels"] if y != -100) == len(answer_tokens)
    # an answer longer than the window is cut too, and its labels still follow the offsets
    long_answer = "The tower is tall. " * 30 + "It was built in 1950."
    s = long_answer.index("1950")
    ex = spans.SpanExample(CONTEXT, None, long_answer, [(s, s + 4)])
    enc = data.encode_detection(tok, ex, 64, format_prompt)
    assert len(enc["input_ids"]) == 64
    assert set(enc["labels"]) <= {-100, 0, 1}


def test_best_cut_is_the_best_f1_nearest_one_half() -> None:
    from lab.training.calibrate import best_cut

    scores = np.array([0.1, 0.3, 0.6, 0.7])
    gold = np.array([False, True, True, True])
    cut, f1 = best_cut(scores, gold)
    # every cut from 0.10 to 0.29 separates the classes; 0.29 is nearest 0.5
    assert f1 == 1.0 and cut == pytest.approx(0.29)
    # a cut above every score flags nothing: F1 0, never chosen over a real one
    cut, f1 = best_cut(np.array([0.2, 0.9]), np.array([False, True]))
    assert f1 == 1.0 and 0.2 <= cut < 0.9


def test_bias_shift_moves_every_token_probability_by_the_same_logit(tmp_path: Path) -> None:
    import shutil

    import torch
    from transformers import AutoModelForTokenClassification

    from lab.training.calibrate import shift_bias
    from tests._tiny_models import build_tiny_model

    folder = build_tiny_model("bert", tmp_path / "tiny")
    ids = torch.tensor([[2, 5, 6, 7, 3]])

    def logit_gap(path: Path) -> torch.Tensor:
        model = AutoModelForTokenClassification.from_pretrained(path).eval()
        with torch.inference_mode():
            logits = model(input_ids=ids).logits[0]
        return logits[:, 1] - logits[:, 0]

    before = logit_gap(folder)
    copy = tmp_path / "shifted"
    shutil.copytree(folder, copy)
    shift_bias(copy, 0.75)
    assert torch.allclose(logit_gap(copy) - before, torch.full_like(before, 0.75), atol=1e-3)


def test_hard_negatives_are_exactly_labelled_clean_examples_the_detector_flags() -> None:
    import argparse

    from lab.training.train import hard_negatives

    ctx = ["The tower was built in 1889 in Paris."]
    copied = spans.SpanExample(ctx, None, "The tower was built in 1889.", [], "clean")
    reworded = spans.SpanExample(ctx, None, "The tower was erected in 1889.", [], "clean")
    noisy = spans.SpanExample(
        ctx, None, "The tower was erected in 1889.", [], "halueval_summ_right"
    )
    wrong = spans.SpanExample(ctx, None, "The tower was built in 1950.", [(23, 27)], "number")
    # "lexical" loads the word-overlap detector: it flags "erected", absent from the context
    args = argparse.Namespace(init=Path("lexical"), hard_negatives=10)
    mined = hard_negatives([copied, reworded, noisy, wrong], args, random.Random(0))
    # only the clean copy it flags; not the clean one it passes, not a noisy-label kind,
    # never an example with spans
    assert mined == [reworded]


def test_model_card_commands_rebuild_the_chain_with_its_calibration(tmp_path: Path) -> None:
    import json

    from lab.training.card import lineage, lineage_commands

    first = tmp_path / "stage1"
    first.mkdir()
    calibrate = "python -m lab.training.calibrate stage1 --seed 13 --halueval 400 --synthetic 400"
    (first / "training_metrics.json").write_text(
        json.dumps(
            {
                "stages": [{"args": {"seed": "13", "steps": "300"}, "train_seconds": 60}],
                "calibration": {"command": calibrate},
            }
        )
    )
    stages = lineage({"seed": "13", "steps": "600", "init": str(first)}, {"train_seconds": 9})
    assert [s["args"]["steps"] for s in stages] == ["300", "600"]
    assert lineage_commands(stages, "core/_bundled/detector") == [
        "python -m lab.training.train --seed 13 --steps 300 --out runs/stage1/detector",
        "python -m lab.training.calibrate runs/stage1/detector --seed 13 --halueval 400 "
        "--synthetic 400",
        "python -m lab.training.train --seed 13 --steps 600 --init runs/stage1/detector "
        "--out core/_bundled/detector",
    ]
