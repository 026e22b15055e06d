from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests._tiny_models import build_keyword_model, build_tiny_model
from truthlens_integrations.core._errors import ModelNotAvailableError
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.models.detection import Detector, load_detector

if TYPE_CHECKING:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.instrumentation.events import BaseEvent

logging.getLogger("transformers").setLevel(logging.ERROR)

EIFFEL_CONTEXT = (
    '{"name": "Eiffel Tower", "built": "1887-1889", "height": "330 meters", '
    '"location": "Paris, France"}'
)
EIFFEL_QUESTION = "When was the Eiffel Tower built?"
EIFFEL_ANSWER = "The Eiffel Tower was built in 1950 and is 500 meters tall."

# The bundled weights, where this checkout has them (tests that need them skip otherwise).
try:
    from truthlens_integrations.core.models import bundled_detector_path

    BUNDLED: Path | None = bundled_detector_path()
except ModelNotAvailableError:
    BUNDLED = None

needs_weights = pytest.mark.skipif(BUNDLED is None, reason="bundled weights are not here")


@pytest.fixture(scope="session", autouse=True)
def _onnx_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """ONNX graphs built during the tests go to a temporary cache, not the user's."""
    mp = pytest.MonkeyPatch()
    mp.setenv("TRUTHLENS_CACHE_DIR", str(tmp_path_factory.mktemp("truthlens-cache")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def blocking() -> TruthLens:
    """The bundled models on a policy that blocks flagged and unverifiable answers."""
    engine = TruthLens.from_config(action="block")
    _ = engine.detector, engine.nli, engine.fact_checker
    return engine


@pytest.fixture
def hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a machine without the Hugging Face hub sees: ``HF_HUB_OFFLINE`` set.

    huggingface_hub reads the variable once, when it is imported, so its constant is set
    too (a ``setenv`` alone does nothing once another test has imported it). Offline, the
    hub client also skips the agent registry it otherwise fetches with the first
    request headers (huggingface_hub 2.x), even for ``local_files_only``.
    """
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.fixture
def hub_unreachable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A machine that tries the hub and cannot reach it (``HF_HUB_OFFLINE`` unset).

    Sockets are off in the tests, so the attempt fails; pytest-socket warns each time it
    blocks one, and the test requires that warning: the network really was tried.
    """
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with pytest.warns(UserWarning, match="A test tried to use socket"):
        yield


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


# Shared by the test modules that drive the guard (a module may define its own).


@pytest.fixture(scope="module")
def base() -> TruthLens:
    """An engine on the bundled models, loaded once for the module."""
    engine = TruthLens.from_config()
    _ = engine.detector, engine.nli, engine.fact_checker  # load once for the module
    return engine


@pytest.fixture(scope="module")
def detector(keyword_model_dir: Path) -> Detector:
    """The keyword detector: flags exactly "1950", "500" and "meters"."""
    return load_detector(keyword_model_dir)


@pytest.fixture(scope="module")
def spanless(keyword_model_dir: Path) -> Detector:
    """The keyword detector flagging the Eiffel answer as a whole, with no span.

    Its score is the largest token probability and a span needs a token above 0.999:
    the score reaches the threshold while no token reaches the token threshold, as the
    bundled detector's calibrated score (absent words, length) can.
    """
    return load_detector(keyword_model_dir, aggregation="max", token_threshold=0.999)


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    """A LlamaIndex vector index over the Eiffel documents of ``tests/_llamaindex_support``."""
    from tests._llamaindex_support import build_index

    return build_index()


@pytest.fixture
def collected() -> Iterator[list[BaseEvent]]:
    """The LlamaIndex instrumentation events dispatched during the test."""
    from tests._llamaindex_support import collect_events

    with collect_events() as events:
        yield events
