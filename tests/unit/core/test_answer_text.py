"""The rule layer reads each answer's sentences once: ``core/_text.py`` ``AnswerText``.

One guarded answer goes through the evidence detector's units, the unit, negation, hedge
and abstention rules, the response map's sentence signals, a route's re-scoring and the
NLI premise of each span; each read the answer's sentences, and split it anew (16 splits
of one three-sentence answer). Now the answer is split once per guard call and every rule
reads that split.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator

import pytest

from tests._samples import rag_map_file
from tests.conftest import BUNDLED
from truthlens_integrations.core import _text
from truthlens_integrations.core._text import AnswerText, split_sentences
from truthlens_integrations.core.engine import TruthLens

CONTEXT = [
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}',
    "The tower is not painted every year. It is repainted about every seven years.",
]
QUESTION = "When was the Eiffel Tower built?"
# numbers (the unit rule), a negation, a hedge, a leading "Yes," and an abstention
ANSWER = (
    "Yes, the Eiffel Tower was built in 1950 and is 500 meters tall. "
    "It is painted every year. It is currently in Paris. "
    "The provided passages do not mention who designed it."
)
OTHER = "The Eiffel Tower was built from 1887 to 1889. It is not in Rome."


@pytest.fixture
def splits(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every split of a text into sentences, counted by text, with the caches emptied."""
    from truthlens_integrations.core.models.detection import _rules as _adjust

    counted: Counter[str] = Counter()
    original = split_sentences

    def counting(text: str) -> list[tuple[int, int]]:
        counted[text] += 1
        return original(text)

    for module in list(sys.modules.values()):
        if getattr(module, "split_sentences", None) is split_sentences:
            monkeypatch.setattr(module, "split_sentences", counting)
    _text._answer_text.cache_clear()
    _adjust._rule_verdicts.cache_clear()
    yield counted
    _text._answer_text.cache_clear()


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TruthLens]:
    if BUNDLED is None:
        pytest.skip("bundled weights are not here")
    default = TruthLens.from_config()
    everything = {"type": "keyword", "name": "all", "keywords": ["the", "when", "is"]}
    rag_file = str(rag_map_file(tmp_path_factory.mktemp("rag")))
    plugin = {"type": "hallucination", "configuration": {"calibration": rag_file}}
    routed = {
        "decisions": [{"name": "rag", "rules": {"conditions": [everything]}, "plugins": [plugin]}]
    }
    rag = TruthLens.from_config(routed, detector=default.detector, nli=default.nli)
    return {"default": default, "rag route": rag}


@pytest.mark.parametrize("name", ["default", "rag route"])
def test_each_answer_is_split_once_per_guard_call(
    engines: dict[str, TruthLens], name: str, splits: Counter[str]
) -> None:
    engine = engines[name]
    verdict = engine.guard(context=CONTEXT, question=QUESTION, answer=ANSWER)
    assert verdict.detected and verdict.spans  # the NLI premises were built, too
    assert splits[ANSWER] == 1
    # no rule split a piece of the answer either (a unit, a sentence)
    assert not [text for text in splits if text != ANSWER and text in ANSWER]
    engine.guard(context=CONTEXT, question=QUESTION, answer=OTHER)
    assert splits[OTHER] == 1 and splits[ANSWER] == 1  # each answer once


def test_the_split_is_the_one_rule() -> None:
    text = AnswerText.of(ANSWER)
    assert text.sentences == tuple(split_sentences(ANSWER))
    assert AnswerText.of(text) is text and AnswerText.of(ANSWER) is text  # built once
    assert text.sentence_at(ANSWER.index("1950")).startswith("Yes, the Eiffel Tower")
    assert AnswerText.of("   ").sentences_or_whole() == ((0, 3),)
