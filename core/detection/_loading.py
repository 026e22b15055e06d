"""Load token-classification checkpoints once, from a local folder or the Hugging Face Hub."""

from __future__ import annotations

import logging
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._device import resolve_device, resolve_dtype
from .._errors import ModelLoadError, ModelNotAvailableError

if TYPE_CHECKING:
    import torch

__all__ = ["LoadedTokenClassifier", "clear_model_cache", "load_token_classifier"]

logger = logging.getLogger(__name__)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# Tokenizers report a huge sentinel when they have no limit of their own.
_NO_LIMIT = 1_000_000


@dataclass(frozen=True)
class LoadedTokenClassifier:
    """A model and tokenizer loaded once and shared by every detector that names them."""

    model_id: str
    model: Any
    tokenizer: Any
    device: torch.device
    dtype: torch.dtype
    max_length: int
    input_names: tuple[str, ...]
    # Fast tokenizers are not safe to call from several threads at once.
    tokenizer_lock: threading.Lock = field(default_factory=threading.Lock, compare=False)


_cache: dict[tuple[str, str, str, str | None], LoadedTokenClassifier] = {}
_cache_lock = threading.Lock()


def clear_model_cache() -> None:
    """Forget every loaded model, e.g. to free memory in a long-running process."""
    with _cache_lock:
        _cache.clear()


def load_token_classifier(
    name: str | os.PathLike[str],
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    revision: str | None = None,
    local_files_only: bool | None = None,
) -> LoadedTokenClassifier:
    """Load (or reuse) a two-class token-classification model and its fast tokenizer.

    Args:
        name: A local model directory, or a Hugging Face Hub id such as
            ``KRLabsOrg/lettucedect-base-modernbert-en-v1``.
        device: Where to run; ``None`` picks CUDA, then MPS, then the CPU.
        dtype: Precision; ``None`` picks bf16/fp16 on GPUs and fp32 on the CPU.
        revision: Hub revision (branch, tag or commit) for hub ids.
        local_files_only: Only use the local Hugging Face cache for hub ids.

    Returns:
        The shared, loaded model.

    Raises:
        ModelNotAvailableError: If the folder does not exist and the hub cannot provide
            the id (offline, blocked, unknown repository).
        ModelLoadError: If the files exist but are not a usable two-class token
            classifier with a fast tokenizer.
    """
    resolved_device = resolve_device(device)
    resolved_dtype = resolve_dtype(resolved_device, dtype)
    source = _resolve_source(name)
    key = (source, str(resolved_device), str(resolved_dtype), revision)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None:
            cached = _load(source, resolved_device, resolved_dtype, revision, local_files_only)
            _cache[key] = cached
    return cached


def _resolve_source(name: str | os.PathLike[str]) -> str:
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelLoadError(f"{path} is a folder but holds no config.json: not a model")
        return str(path.resolve())
    text = os.fspath(name)
    if path.exists() or not _HUB_ID.match(text):
        raise ModelNotAvailableError(
            f"model {text!r} is neither a model folder nor a Hugging Face Hub id"
        )
    return text


def _hub_unavailable(model_id: str, exc: BaseException) -> ModelNotAvailableError:
    return ModelNotAvailableError(
        f"could not load {model_id!r} from the Hugging Face Hub ({type(exc).__name__}: {exc}). "
        "If this machine cannot reach the hub, download the model where it can "
        f"(`hf download {model_id} --local-dir ./{model_id.rsplit('/', 1)[-1]}`), copy the "
        "folder here and pass its path instead of the hub id, e.g. "
        f"load_detector('./{model_id.rsplit('/', 1)[-1]}') or --model PATH."
    )


def _load(
    source: str,
    device: torch.device,
    dtype: torch.dtype,
    revision: str | None,
    local_files_only: bool | None,
) -> LoadedTokenClassifier:
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    is_local = Path(source).is_dir()
    hub_kwargs: dict[str, Any] = {}
    if not is_local:
        hub_kwargs = {"revision": revision}
        if local_files_only is not None:
            hub_kwargs["local_files_only"] = local_files_only
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **hub_kwargs)
        model = AutoModelForTokenClassification.from_pretrained(source, dtype=dtype, **hub_kwargs)
    except Exception as exc:
        if not is_local:
            raise _hub_unavailable(source, exc) from exc
        raise ModelLoadError(f"could not load the model in {source}: {exc}") from exc
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"{source} has no fast tokenizer (tokenizer.json); character offsets need one"
        )
    if model.config.num_labels != 2:
        raise ModelLoadError(
            f"{source} has {model.config.num_labels} labels; a hallucination detector has 2 "
            "(0 = supported, 1 = hallucinated)"
        )
    model.to(device).eval()
    logger.info("loaded detector %s on %s (%s)", source, device, dtype)
    return LoadedTokenClassifier(
        model_id=source,
        model=model,
        tokenizer=tokenizer,
        device=device,
        dtype=dtype,
        max_length=_window(model.config, tokenizer),
        input_names=tuple(tokenizer.model_input_names),
    )


def _window(config: Any, tokenizer: Any) -> int:
    limits = []
    positions = getattr(config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        # RoBERTa-style models reserve positions for the padding offset.
        pad_offset = (getattr(config, "pad_token_id", None) or 0) + 1
        if getattr(config, "model_type", "") in {"roberta", "xlm-roberta", "camembert"}:
            positions -= pad_offset
        limits.append(positions)
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < _NO_LIMIT:
        limits.append(tokenizer_limit)
    if not limits:
        return 512
    return min(limits)
