"""Tests of ``core/models/detection/_transformer.py``: the token classifier detector: offsets,
batches, windows, typed errors.
"""

from __future__ import annotations

import asyncio
import json
import random
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import EIFFEL_ANSWER, EIFFEL_CONTEXT, EIFFEL_QUESTION
from truthlens_integrations.core import (
    ContextTooLongError,
    DetectionConfig,
    DetectionInput,
    DetectionStatus,
    InvalidInputError,
)
from truthlens_integrations.core.models.detection import (
    Detector,
    TransformerDetector,
    load_detector,
)
from truthlens_integrations.core.models.detection._transformer import _batches, _Segment

PASSAGES = [f"alice visited {city} in 1920 and bob sold the tower." for city in ("rome", "paris")]


def test_keyword_model_spans_have_exact_offsets(keyword_model_dir: Path) -> None:
    detector = load_detector(keyword_model_dir)
    result = detector.detect(context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER)
    assert [s.text for s in result.spans] == ["1950", "500 meters"]
    for span in result.spans:
        assert EIFFEL_ANSWER[span.start : span.end] == span.text
        assert span.confidence > 0.5
    assert "Paris" not in "".join(s.text for s in result.spans)
    assert result.detected and result.status is DetectionStatus.HALLUCINATED
    # coverage counts the characters inside scored tokens: every non-space character here
    assert result.coverage.answer_chars_scored == len(EIFFEL_ANSWER.replace(" ", ""))
    assert not result.coverage.context_split
    # every token's offsets point at its own text
    assert all(EIFFEL_ANSWER[t.start : t.end] == t.text for t in result.tokens)


def test_detector_satisfies_protocol(tiny_bert_dir: Path) -> None:
    assert isinstance(load_detector(tiny_bert_dir), Detector)


@pytest.mark.parametrize("fixture", ["tiny_bert_dir", "tiny_modernbert_dir"])
def test_offsets_are_character_accurate(fixture: str, request: pytest.FixtureRequest) -> None:
    detector = TransformerDetector(request.getfixturevalue(fixture))
    answer = "  Tall   towers, built 1887;\nowned by alice!  "
    result = detector.detect(context=PASSAGES, question="who?", answer=answer)
    assert result.tokens
    for token in result.tokens:
        assert answer[token.start : token.end] == token.text
        assert token.text.strip() == token.text
    covered = "".join(t.text for t in result.tokens)
    # characters the tiny vocabulary cannot read ([UNK]) are left unscored, nothing else
    unknown = set("".join(answer.split())) - set(covered)
    tokenizer = detector._loaded.tokenizer
    assert all(tokenizer.convert_tokens_to_ids(ch) == tokenizer.unk_token_id for ch in unknown)
    readable = [ch for ch in "".join(answer.split()) if ch not in unknown]
    assert covered.replace(" ", "") == "".join(readable)
    assert result.coverage.answer_chars_scored == sum(len(t.text) for t in result.tokens)


@pytest.mark.parametrize("fixture", ["tiny_bert_dir", "tiny_modernbert_dir"])
def test_batch_equals_single(fixture: str, request: pytest.FixtureRequest) -> None:
    detector = TransformerDetector(
        request.getfixturevalue(fixture), config=DetectionConfig(batch_size=3, token_threshold=0.3)
    )
    items = [
        DetectionInput.create(context=PASSAGES[: i % 2 + 1], question=q, answer=a)
        for i, (q, a) in enumerate(
            [
                ("who?", "alice."),
                (None, "bob sold the tower in 1950 to carol and dave in rome."),
                ("where?", "rome"),
                ("when?", "in 1920, alice visited paris and london and berlin."),
                ("what?", "the red castle."),
            ]
        )
    ]
    batched = detector.detect_batch(items)
    for item, got in zip(items, batched, strict=True):
        alone = detector.detect(
            context=list(item.context), question=item.question, answer=item.answer
        )
        assert [t.start for t in got.tokens] == [t.start for t in alone.tokens]
        assert [t.probability for t in got.tokens] == pytest.approx(
            [t.probability for t in alone.tokens], abs=1e-5
        )
        assert got.spans == [s.model_copy() for s in alone.spans] or got.score == pytest.approx(
            alone.score, abs=1e-5
        )


def _rows(*lengths: int) -> list[_Segment]:
    return [_Segment(0, 0, 0, [1] * n, None, [], []) for n in lengths]


def test_cpu_batches_bound_the_padding_of_every_row() -> None:
    order = _rows(300, 290, 269, 250, 60, 50, 40)
    sizes = [[len(s.input_ids) for s in batch] for batch in _batches(order, 16, 32)]
    assert sizes == [[300, 290, 269], [250], [60, 50, 40]]
    # Without a bound (accelerators) only the batch size splits them.
    assert [len(b) for b in _batches(order, 16, None)] == [7]
    assert [len(b) for b in _batches(order, 3, None)] == [3, 3, 1]
    assert [len(b) for b in _batches(order, 2, 32)] == [2, 2, 2, 1]
    # a token budget per run (the ONNX backend's): padded size rows x first row's length
    by_tokens = [[len(s.input_ids) for s in b] for b in _batches(order, 16, None, 512)]
    assert by_tokens == [[300], [290], [269], [250, 60], [50, 40]]
    both = [[len(s.input_ids) for s in b] for b in _batches(order, 16, 32, 512)]
    assert both == [[300], [290], [269], [250], [60, 50, 40]]


def test_rows_of_very_different_lengths_score_as_they_do_alone(tiny_bert_dir: Path) -> None:
    detector = TransformerDetector(tiny_bert_dir, config=DetectionConfig(token_threshold=0.3))
    long_answer = " ".join(["bob sold the tower in 1950 to carol in rome."] * 8)
    items = [
        DetectionInput.create(context=PASSAGES, question=None, answer=long_answer),
        DetectionInput.create(context=PASSAGES[:1], question="who?", answer="alice."),
    ]
    batched = detector.detect_batch(items)
    for item, got in zip(items, batched, strict=True):
        alone = detector.detect(
            context=list(item.context), answer=item.answer, question=item.question
        )
        assert [t.probability for t in got.tokens] == pytest.approx(
            [t.probability for t in alone.tokens], abs=1e-5
        )


def test_long_context_is_windowed_and_a_token_is_supported_by_any_window(
    tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # every window is scored here (no early exit), so the minimum is over all of them
    detector = TransformerDetector(
        tiny_bert_dir, config=DetectionConfig(window_overlap=8, early_exit=False)
    )
    context = [f"passage about {w} and the old tower in rome." for w in ["alice"] * 30]
    context.append("the tower was built in 1889 by grace.")
    answer = "the tower was built in 1889."
    rows: list[list[float]] = []
    real_forward = detector._forward

    def spy(segments):  # type: ignore[no-untyped-def]
        out = real_forward(segments)
        assert all(len(s.input_ids) <= detector.max_length for s in segments)
        rows.extend(out[id(s)] for s in segments)
        return out

    monkeypatch.setattr(detector, "_forward", spy)
    result = detector.detect(context=context, question="when?", answer=answer)
    assert result.coverage.context_split
    assert result.coverage.context_windows == len(rows) > 1
    expected = [min(col) for col in zip(*rows, strict=True)]
    assert [t.probability for t in result.tokens] == pytest.approx(expected)
    # the supporting passage sits in one window only and is not lost
    assert any(row != rows[0] for row in rows[1:])


def test_window_contents_cover_every_passage(tiny_bert_dir: Path) -> None:
    detector = TransformerDetector(tiny_bert_dir)
    names = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy"]
    pairs = [f"{n} {c}" for n in names for c in ("rome", "paris", "london", "berlin")]
    context = [f"{pair} visited the old tower with bob and carol." for pair in pairs]
    item = DetectionInput.create(context=context, question="when?", answer="in 1920.")
    plan = detector._plan_batch([item])[0]
    assert len(plan.segments) > 1
    tokenizer = detector._loaded.tokenizer
    text = " ".join(tokenizer.decode(s.input_ids) for s in plan.segments)
    for pair in pairs:
        assert pair in text


def test_answer_longer_than_the_window_is_scored_in_pieces(tiny_bert_dir: Path) -> None:
    detector = TransformerDetector(tiny_bert_dir)
    answer = " ".join(f"alice visited rome in 19{n % 90:02d}." for n in range(60))
    result = detector.detect(context=PASSAGES, question="when?", answer=answer)
    assert result.coverage.answer_split and result.coverage.answer_pieces > 1
    assert result.coverage.answer_chars_scored == sum(len(t.text) for t in result.tokens)
    starts = [t.start for t in result.tokens]
    assert starts == sorted(starts)
    assert all(answer[t.start : t.end] == t.text for t in result.tokens)
    assert result.tokens[-1].end == len(answer)


def test_too_many_windows_is_a_typed_error(tiny_bert_dir: Path) -> None:
    detector = TransformerDetector(tiny_bert_dir, config=DetectionConfig(max_windows=2))
    with pytest.raises(ContextTooLongError, match="max_windows"):
        detector.detect(context=["alice visited rome. " * 200], question="q", answer="rome")


def test_empty_context_is_unverifiable_never_clean(tiny_bert_dir: Path) -> None:
    detector = TransformerDetector(tiny_bert_dir)
    for context in (None, "", [], ["  "]):
        result = detector.detect(context=context, question="q?", answer="alice.")
        assert result.status is DetectionStatus.UNVERIFIABLE
        assert not result.grounded and not result.detected and result.spans == []
        assert result.coverage.context_windows == 0


@pytest.mark.parametrize(
    ("context", "answer", "message"),
    [
        (["ok"], "", "answer is empty"),
        (["ok"], "   ", "answer is empty"),
        (["ok"], None, "answer must be a string"),
        (["ok", 3], "fine", r"context\[1\] must be a string"),
        ({"k": "v"}, "fine", "context must be a string or a list"),
    ],
)
def test_bad_input_raises_typed_errors(
    tiny_bert_dir: Path, context: object, answer: object, message: str
) -> None:
    detector = TransformerDetector(tiny_bert_dir)
    with pytest.raises(InvalidInputError, match=message):
        detector.detect(context=context, question="q", answer=answer)  # type: ignore[arg-type]


def test_model_is_loaded_once_and_shared(tiny_bert_dir: Path) -> None:
    a = TransformerDetector(tiny_bert_dir)
    b = TransformerDetector(tiny_bert_dir, config=DetectionConfig(token_threshold=0.9))
    assert a._loaded.model is b._loaded.model


def test_async_matches_sync_and_threads_share_safely(keyword_model_dir: Path) -> None:
    detector = load_detector(keyword_model_dir)
    kwargs = {"context": EIFFEL_CONTEXT, "question": EIFFEL_QUESTION, "answer": EIFFEL_ANSWER}
    sync = detector.detect(**kwargs)
    got = asyncio.run(detector.adetect(**kwargs))
    assert got.spans == sync.spans
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: detector.detect(**kwargs), range(8)))
    assert all(r.spans == sync.spans for r in results)


def test_result_serialises_to_json(keyword_model_dir: Path) -> None:
    result = load_detector(keyword_model_dir).detect(
        context=EIFFEL_CONTEXT, question=EIFFEL_QUESTION, answer=EIFFEL_ANSWER
    )
    payload = json.loads(result.model_dump_json())
    assert payload["spans"][0]["start"] == EIFFEL_ANSWER.index("1950")
    assert payload["status"] == "hallucinated"


def _count_forward_rows(
    detector: TransformerDetector, monkeypatch: pytest.MonkeyPatch
) -> list[int]:
    calls: list[int] = []
    real_forward = detector._forward

    def spy(segments):  # type: ignore[no-untyped-def]
        calls.append(len(segments))
        return real_forward(segments)

    monkeypatch.setattr(detector, "_forward", spy)
    return calls


LONG_CONTEXT = [f"passage {n} about alice and the old harbour in rome." for n in range(40)] + [
    "the tower was built in 1889 and is 330 meters tall."
]


@pytest.mark.parametrize(
    ("answer", "windows_scored"),
    [
        ("the tower was built in 1889.", "first only"),  # nothing flagged: one window is enough
        ("the tower was built in 1950.", "all"),  # '1950' stays flagged in every window
    ],
)
def test_early_exit_stops_scoring_windows_once_nothing_is_flagged(
    keyword_model_dir: Path, monkeypatch: pytest.MonkeyPatch, answer: str, windows_scored: str
) -> None:
    exact = TransformerDetector(keyword_model_dir, config=DetectionConfig(early_exit=False))
    fast = TransformerDetector(keyword_model_dir, config=DetectionConfig(early_exit=True))
    calls = _count_forward_rows(fast, monkeypatch)
    got = fast.detect(context=LONG_CONTEXT, question="when?", answer=answer)
    want = exact.detect(context=LONG_CONTEXT, question="when?", answer=answer)
    planned = want.coverage.context_windows
    assert planned > 2
    assert sum(calls) == (1 if windows_scored == "first only" else planned)
    # what early exit may change: probabilities of unflagged tokens; never spans or scores
    assert got.spans == want.spans
    assert got.score == pytest.approx(want.score) and got.detected == want.detected
    assert [t.probability > 0.5 for t in got.tokens] == [t.probability > 0.5 for t in want.tokens]


def test_the_window_sharing_most_words_with_the_answer_is_scored_first(
    tiny_bert_dir: Path,
) -> None:
    detector = TransformerDetector(tiny_bert_dir)
    item = DetectionInput.create(
        context=LONG_CONTEXT, question="when?", answer="the tower was built in 1889."
    )
    plan = detector._plan_batch([item])[0]
    assert len(plan.segments) > 2
    tokenizer = detector._loaded.tokenizer
    first = tokenizer.decode(plan.segments[0].input_ids)
    assert "built in 1889" in first
    assert [s.window for s in plan.segments] == list(range(len(plan.segments)))


# -- Evidence selection and the evidence detector: order, long contexts, refusals, coverage.


# -- early exit: the KeyError and a randomized comparison with the exact path ----------


def test_pieces_that_stop_in_different_rounds_do_not_crash(tiny_bert_dir: Path) -> None:
    # A long answer (several pieces) over a context of many windows: some pieces stop
    # after their first window, others go on. This raised KeyError in _forward_in_rounds.
    context = [f"alice visited rome in 19{i:02d} with bob and carol." for i in range(40)]
    answer = " ".join(f"alice visited rome in 19{i:02d}." for i in range(0, 80, 3))
    config = DetectionConfig(max_length=128, token_threshold=0.5, max_windows=400)
    detector = TransformerDetector(tiny_bert_dir, config=config)
    result = detector.detect(context=context, question="when?", answer=answer)
    assert result.coverage.answer_pieces > 1
    assert result.coverage.context_windows > 1


@pytest.mark.parametrize("seed", range(6))
def test_early_exit_gives_the_exact_verdict(tiny_bert_dir: Path, seed: int) -> None:
    rng = random.Random(seed)
    words = ["alice", "bob", "carol", "rome", "paris", "tower", "bridge", "built", "sold"]
    context = [
        " ".join(rng.choice(words) for _ in range(rng.randint(4, 30))) + "."
        for _ in range(rng.randint(1, 25))
    ]
    answer = " ".join(
        " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + "."
        for _ in range(rng.randint(1, 12))
    )
    window = rng.choice([128, 160, 256])
    threshold = rng.choice([0.3, 0.5, 0.6])
    base = {"max_length": window, "token_threshold": threshold, "max_windows": 500}
    fast = TransformerDetector(tiny_bert_dir, config=DetectionConfig(**base, early_exit=True))
    exact = TransformerDetector(tiny_bert_dir, config=DetectionConfig(**base, early_exit=False))
    a = fast.detect(context=context, question="who?", answer=answer)
    b = exact.detect(context=context, question="who?", answer=answer)
    assert [(s.start, s.end) for s in a.spans] == [(s.start, s.end) for s in b.spans]
    assert a.detected == b.detected
    assert a.score == pytest.approx(b.score)


# -- unreadable text ------------------------------------------------------------------------


def test_unreadable_answer_is_unverifiable_not_supported(tiny_bert_dir: Path) -> None:
    # the tiny vocabulary has no token for these characters: everything is [UNK]
    detector = TransformerDetector(tiny_bert_dir)
    result = detector.detect(context=["alice visited rome."], question=None, answer="ሰላም ነው ✨✨")
    assert result.status is DetectionStatus.UNVERIFIABLE
    assert not result.detected
    assert result.coverage.answer_chars_scored == 0
