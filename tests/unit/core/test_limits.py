"""Limits that count work (issue 51, kind 7): sentences, and characters as the model reads them.

Twelve thousand characters of one-line claims passed the character limit and cost the
detector far more than twelve thousand of prose: it judges each sentence on its own. The
limits now count an answer's sentences too, and ``truthlens calibrate`` counts characters
after normalisation (700 x U+FDFA is 12,600 characters to the model). The timing of the
work itself is in ``benchmarks/results/hardening_round4/languages.md``, not here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from truthlens_integrations._cli import main
from truthlens_integrations.core import DetectionInput, InputTooLargeError, TokenScore
from truthlens_integrations.core._calibration._signals import sentence_peak, sentence_signals
from truthlens_integrations.core._limits import (
    MAX_ANSWER_SENTENCES,
    InputLimits,
    answer_sentences,
    check_input_sizes,
)
from truthlens_integrations.core._text import AnswerText
from truthlens_integrations.core.models.detection._remote import _chunks
from truthlens_integrations.core.models.detection._rules import _first_marks
from truthlens_integrations.core.policy import load_policy

CONTEXT = ["The Eiffel Tower was built from 1887 to 1889 and is 330 metres tall."]
CLAIMS = " ".join(["It's tall.", "In Paris.", "Built 1889."][i % 3] for i in range(501))
PROSE = (
    "The Eiffel Tower, completed in 1889 for the World's Fair, stands 330 metres tall on "
    "the Champ de Mars and was designed by the engineering company of Gustave Eiffel. "
) * 70


def _input(answer: str) -> DetectionInput:
    return DetectionInput.create(context=CONTEXT, question=None, answer=answer)


def test_an_answer_of_more_sentences_than_the_limit_is_refused_before_any_model() -> None:
    assert len(CLAIMS) < 12_000 and answer_sentences(CLAIMS) == 501
    with pytest.raises(InputTooLargeError, match=r"501 sentences; the limit is 500") as info:
        check_input_sizes([_input(CLAIMS)], InputLimits())
    assert (info.value.limit, info.value.size) == (MAX_ANSWER_SENTENCES, 501)
    # prose at the character limit is far under it
    assert 11_000 < len(PROSE) <= 12_000 and answer_sentences(PROSE) == 70
    check_input_sizes([_input(PROSE)], InputLimits())


def test_the_sentences_of_a_request_have_a_total() -> None:
    many = " ".join(["Tall."] * 450)
    with pytest.raises(InputTooLargeError, match=r"the answers of this request: 2,250 sentences"):
        check_input_sizes([_input(many)] * 5, InputLimits())
    check_input_sizes([_input(many)] * 4, InputLimits())


def test_sentences_are_counted_as_the_detector_reads_the_answer() -> None:
    # A full-width full stop folds to "." (NFKC): 2 sentences to the detector, not 1.
    assert answer_sentences("It is tall\uff0e It is in Paris\uff0e") == 2
    assert answer_sentences(PROSE) == len(AnswerText.of(PROSE).sentences)


def test_the_policy_sets_the_sentence_limits_of_the_service() -> None:
    policy = load_policy(
        {"service": {"max_answer_sentences": 10, "max_request_answer_sentences": 15}}
    )
    limits = policy.service.input_limits()
    assert (limits.max_answer_sentences, limits.max_request_answer_sentences) == (10, 15)
    with pytest.raises(InputTooLargeError, match="11 sentences; the limit is 10"):
        check_input_sizes([_input(" ".join(["It is tall."] * 11))], limits)


def test_the_remote_client_sends_requests_within_the_services_sentence_total() -> None:
    items = [_input(" ".join(["It is tall."] * 6)) for _ in range(4)]
    chunks = _chunks(items, 64, {"max_request_answer_sentences": 12})
    assert [len(c) for c in chunks] == [2, 2]


def test_truthlens_detect_refuses_too_many_sentences_before_the_model_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No model folder exists at this path: the answer is refused before any load.
    args = ["detect", "--model", str(tmp_path / "no-model"), "--context", CONTEXT[0]]
    assert main([*args, "--answer", CLAIMS]) == 2
    assert "the answer of --answer: 501 sentences" in capsys.readouterr().err


def _calibrate(tmp_path: Path, rows: list[dict[str, object]]) -> int:
    data = tmp_path / "labelled.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return main(
        ["calibrate", "--model", str(tmp_path / "no-model"), "--data", str(data),
         "--out", str(tmp_path / "calib.json"), "--no-progress"]
    )  # fmt: skip


def test_truthlens_calibrate_counts_characters_as_the_model_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wide = "\ufdfa" * 700  # 700 characters to a person, 12,600 to the model (NFKC)
    rows = [{"context": CONTEXT, "answer": wide, "label": 0}]
    assert _calibrate(tmp_path, rows) == 2
    err = capsys.readouterr().err
    assert "12,600 characters as the model reads them" in err and "12,000" in err
    rows = [{"context": CONTEXT, "answer": CLAIMS, "label": 0}]
    assert _calibrate(tmp_path, rows) == 2
    assert "501 sentences" in capsys.readouterr().err


# -- the per-sentence reading is a bisection now; it reads what the scan read --------------


def _scanned_peak(answer: str, tokens: list[TokenScore], absent: list[int]) -> float:
    import math

    from truthlens_integrations.core._calibration._signals import logit

    peak = -math.inf
    for start, end in AnswerText.of(answer).sentences_or_whole():
        largest = max((t.probability for t in tokens if start <= t.start < end), default=0.0)
        count = sum(1 for a in absent if start <= a < end)
        peak = max(peak, logit(largest) + math.log1p(count))
    return peak


def _tokens(answer: str) -> list[TokenScore]:
    import re

    words = list(re.finditer(r"\S+", answer))
    return [
        TokenScore(text=m.group(), start=m.start(), end=m.end(), probability=(n * 37 % 100) / 100)
        for n, m in enumerate(words)
    ]


def test_the_sentence_signals_read_what_a_scan_of_every_token_read() -> None:
    answer = " ".join(["It is tall.", "It was built in 1950 by 500 men.", "Paris!"] * 40)
    tokens = _tokens(answer)
    absent = list(range(0, len(answer), 97))
    assert sentence_peak(answer, tokens, absent) == _scanned_peak(answer, tokens, absent)
    # shuffled input gives the same signals (the bisection sorts what it reads)
    signals = sentence_signals(answer, tokens[::-1], [(a, "w") for a in absent])
    for (start, end), got in signals:
        inside = [t.probability for t in tokens if start <= t.start < end]
        assert got.max_probability == max(inside, default=0.0)
        assert got.absent_words == sum(1 for a in absent if start <= a < end)


def test_each_token_gets_the_first_mark_it_overlaps_as_the_scan_gave_it() -> None:
    answer = "It was built in 1950 and is 500 meters tall."
    tokens = _tokens(answer)
    marks = [(16, 20, "conflict"), (10, 30, "present"), (28, 38, "unseen"), (40, 44, "agree")]
    expected = {}
    for i, token in enumerate(tokens):
        for start, end, verdict in marks:
            if token.start < end and token.end > start:
                expected[i] = verdict
                break
    assert _first_marks(tokens, marks) == expected
