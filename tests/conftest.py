from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests._tiny_models import build_keyword_model, build_tiny_model

logging.getLogger("transformers").setLevel(logging.ERROR)

EIFFEL_CONTEXT = (
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}'
)
EIFFEL_QUESTION = "When was the Eiffel Tower built?"
EIFFEL_ANSWER = "The Eiffel Tower was built in 1950 and is 500 meters tall."


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model("bert", tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="session")
def tiny_modernbert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model("modernbert", tmp_path_factory.mktemp("tiny-modernbert"))


@pytest.fixture(scope="session")
def keyword_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Flags exactly the tokens '1950', '500' and 'meters'."""
    return build_keyword_model(tmp_path_factory.mktemp("keyword"), ["1950", "500", "meters"])
