"""Tests of ``core/models/_loading.py``: broken model folders and an unreachable hub fail at
load time.

Before: a folder without its tokenizer files, or with a config.json of another
architecture, loaded without error and answered at random ("supported" for
everything); a tokenizer of another model failed later with an IndexError; a hub id
on a machine without network spent 46-53 s in retries before the clear error.
No test here touches the network: sockets are disabled, and the hub client is
replaced by a recorder where a download would be attempted.
"""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from tests._tiny_models import build_bpe_tokenizer
from truthlens_integrations.core import ModelLoadError, ModelNotAvailableError
from truthlens_integrations.core.models import _loading, load_detector


def copy_model(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def edit_config(folder: Path, **changes: object) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config.update(changes)
    path.write_text(json.dumps(config), encoding="utf-8")


def test_good_folders_still_load(keyword_model_dir: Path, tiny_modernbert_dir: Path) -> None:
    for folder in (keyword_model_dir, tiny_modernbert_dir):
        detector = load_detector(folder)
        result = detector.detect(context=["the tower."], question="when?", answer="the tower.")
        assert result.grounded


def test_folder_without_tokenizer_files(keyword_model_dir: Path, tmp_path: Path) -> None:
    folder = copy_model(keyword_model_dir, tmp_path / "no-tokenizer")
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)
    with pytest.raises(ModelLoadError, match="no tokenizer files"):
        load_detector(folder)


def test_tokenizer_of_another_model(keyword_model_dir: Path, tmp_path: Path) -> None:
    folder = copy_model(keyword_model_dir, tmp_path / "foreign-tokenizer")
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt"):
        (folder / name).unlink(missing_ok=True)
    build_bpe_tokenizer().save_pretrained(folder)  # 500 tokens for a smaller table
    with pytest.raises(ModelLoadError, match="tokenizer belongs to another model"):
        load_detector(folder)


def test_config_of_another_architecture_with_the_same_shapes(
    keyword_model_dir: Path, tmp_path: Path
) -> None:
    # Same sizes, other parameter names: every weight would be randomly initialised.
    folder = copy_model(keyword_model_dir, tmp_path / "roberta-config")
    edit_config(folder, model_type="roberta", architectures=["RobertaForTokenClassification"])
    with pytest.raises(ModelLoadError, match="parameters are missing") as info:
        load_detector(folder)
    assert "roberta.embeddings" in str(info.value)


def test_config_of_another_architecture_with_other_shapes(
    keyword_model_dir: Path, tiny_modernbert_dir: Path, tmp_path: Path
) -> None:
    folder = copy_model(keyword_model_dir, tmp_path / "modernbert-config")
    shutil.copy(tiny_modernbert_dir / "config.json", folder / "config.json")
    with pytest.raises(ModelLoadError, match=r"config\.json"):
        load_detector(folder)


def test_checkpoint_of_another_task(keyword_model_dir: Path, tmp_path: Path) -> None:
    folder = copy_model(keyword_model_dir, tmp_path / "sequence-classifier")
    edit_config(folder, architectures=["BertForSequenceClassification"])
    with pytest.raises(ModelLoadError, match="not a token classifier"):
        load_detector(folder)


def test_head_with_other_than_two_labels(tiny_bert_dir: Path, tmp_path: Path) -> None:
    folder = copy_model(tiny_bert_dir, tmp_path / "three-labels")
    labels = {"0": "a", "1": "b", "2": "c"}
    edit_config(folder, id2label=labels, label2id={v: int(k) for k, v in labels.items()})
    with pytest.raises(ModelLoadError):
        load_detector(folder)


class _HubRecorder:
    """Stands in for ``from_pretrained`` on hub ids: records the call, finds nothing."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, source: str, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        raise OSError(f"{source} is not in the cache")


def test_unreachable_hub_goes_straight_to_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import AutoTokenizer

    recorder = _HubRecorder()
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", recorder)
    monkeypatch.setattr(_loading, "_hub_reachable", lambda: False)
    with pytest.raises(ModelNotAvailableError, match="not reachable") as info:
        load_detector("example-org/not-cached-detector")
    assert recorder.calls and all(c["local_files_only"] is True for c in recorder.calls)
    assert "pass its path" in str(info.value)


def test_hf_hub_offline_skips_the_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants
    from transformers import AutoTokenizer

    def no_probe() -> bool:
        raise AssertionError("HF_HUB_OFFLINE is set: the network must not be probed")

    recorder = _HubRecorder()
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", recorder)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(_loading, "_hub_reachable", no_probe)
    with pytest.raises(ModelNotAvailableError):
        load_detector("example-org/offline-detector")
    assert recorder.calls[0]["local_files_only"] is True


def test_explicit_local_files_only_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import AutoTokenizer

    recorder = _HubRecorder()
    monkeypatch.setattr(AutoTokenizer, "from_pretrained", recorder)
    monkeypatch.setattr(_loading, "_hub_reachable", lambda: False)
    with pytest.raises(ModelNotAvailableError):
        load_detector("example-org/any-detector", local_files_only=False)
    assert recorder.calls[0]["local_files_only"] is False


def test_probe_answers_even_when_the_connection_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def hanging_connect(*args: object, **kwargs: object) -> object:
        release.wait(30)  # e.g. a name lookup the socket timeout does not bound
        raise OSError("gave up")

    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    monkeypatch.delenv("ALL_PROXY", raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    monkeypatch.setattr(_loading.socket, "create_connection", hanging_connect)
    try:
        assert _loading._hub_reachable(timeout_s=0.2) is False
    finally:
        release.set()


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_probe_without_network_says_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    # Sockets are disabled in the test run, as on a machine without network.
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert _loading._hub_reachable(timeout_s=1.0) is False
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert _loading._hub_reachable(timeout_s=1.0) is True  # the hub client decides


def test_head_with_swapped_labels(keyword_model_dir: Path, tmp_path: Path) -> None:
    # Class 1 is read as "hallucinated": a head trained the other way round would pass
    # every hallucination.
    folder = copy_model(keyword_model_dir, tmp_path / "swapped")
    edit_config(
        folder,
        id2label={"0": "hallucinated", "1": "supported"},
        label2id={"hallucinated": 0, "supported": 1},
    )
    with pytest.raises(ModelLoadError, match="other way round"):
        load_detector(folder)
    named = copy_model(keyword_model_dir, tmp_path / "named")
    edit_config(
        named,
        id2label={"0": "NO_HALLUCINATION", "1": "HALLUCINATION"},
        label2id={"NO_HALLUCINATION": 0, "HALLUCINATION": 1},
    )
    assert load_detector(named).detect(context=["x."], question=None, answer="1950.").detected


# -- checkpoints that ship their own code (issue 48): run only when asked for ------------

_CUSTOM_CODE = {"AutoModelForTokenClassification": "modeling_custom.CustomDetector"}


def test_a_detector_with_its_own_code_needs_the_opt_in(
    keyword_model_dir: Path, tmp_path: Path
) -> None:
    folder = copy_model(keyword_model_dir, tmp_path / "custom")
    edit_config(folder, auto_map=_CUSTOM_CODE)
    for options in ({}, {"trust_remote_code": False}):
        with pytest.raises(ModelLoadError, match="trust_remote_code=True"):
            load_detector(folder, **options)  # type: ignore[arg-type]


def test_a_known_architecture_with_its_own_code_needs_the_opt_in(
    keyword_model_dir: Path, tmp_path: Path
) -> None:
    # transformers loads its own BERT and ignores the checkpoint's code, as it does for a
    # hub id (whose config cannot be read first); the checkpoint still asks for its code
    import torch

    folder = copy_model(keyword_model_dir, tmp_path / "custom")
    edit_config(folder, auto_map=_CUSTOM_CODE)
    with pytest.raises(ModelLoadError, match="trust_remote_code=True"):
        _loading._from_pretrained(str(folder), "token", torch.float32, None, None)


def test_load_detector_passes_the_opt_in_to_the_loader(
    keyword_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[object] = []
    load = _loading.load_pretrained

    def spy(name: Any, **options: Any) -> Any:
        seen.append(options.get("trust_remote_code"))
        return load(name, **options)

    monkeypatch.setattr(_loading, "load_pretrained", spy)
    load_detector(keyword_model_dir, trust_remote_code=True, backend="torch")
    load_detector(keyword_model_dir, backend="torch")
    assert seen == [True, False]
