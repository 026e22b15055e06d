"""``load_detector``: one entry point for every detector backend."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack

from pydantic import ValidationError

from ..._arguments import describe_error, kind, reject_unknown
from ..._errors import InvalidArgumentError, InvalidInputError, ModelNotAvailableError
from ..._types import DetectionConfig, DetectionConfigKwargs
from .._onnx import Backend
from .._service import OnError, is_service_url
from ._base import Detector

if TYPE_CHECKING:
    import torch

__all__ = [
    "DETECTOR_KINDS",
    "DetectorKind",
    "LoadDetectorKwargs",
    "detector_kind",
    "load_detector",
    "runs_model",
]


class _ModelLoadKwargs(TypedDict, total=False):
    """How a transformer model is loaded (see :class:`TransformerDetector`)."""

    device: str | torch.device | None
    dtype: str | torch.dtype | None
    revision: str | None
    local_files_only: bool | None
    model_id: str | None
    strategy: Literal["evidence", "windows"] | None
    backend: Backend
    trust_remote_code: bool


class _ServiceKwargs(TypedDict, total=False):
    """How a service URL is called (see :class:`RemoteDetector`)."""

    timeout_s: float
    retries: int
    on_error: OnError
    chunk_size: int


class LoadDetectorKwargs(DetectionConfigKwargs, _ModelLoadKwargs, _ServiceKwargs, total=False):
    """The keyword arguments of :func:`load_detector`, typed.

    :class:`~truthlens_integrations.core.DetectionConfig` fields, how a transformer
    model is loaded, and how a service URL is called; :func:`load_detector` says which
    apply to which model.
    """


_CONFIG_FIELDS = frozenset(DetectionConfig.model_fields)
_LOAD_FIELDS = frozenset(_ModelLoadKwargs.__optional_keys__)
_STRATEGIES = ("evidence", "windows")
_REMOTE_FIELDS = frozenset(_ServiceKwargs.__optional_keys__)


def load_detector(
    model: str | os.PathLike[str] | None = None,
    *,
    config: DetectionConfig | None = None,
    **options: Unpack[LoadDetectorKwargs],
) -> Detector:
    """Load a hallucination detector.

    Args:
        model: ``None`` or ``"bundled"`` for the model shipped with the package,
            ``"lexical"`` for the word-overlap reference detector, a local model folder,
            a Hugging Face Hub id in the LettuceDetect format, or the URL of a
            TruthLens service (``"http://host:port"``, see ``truthlens serve``).
        config: Thresholds and limits. Alternatively pass its fields as keyword
            arguments (``token_threshold=0.8``, ``threshold=0.6``, ...).
        **options: Typed by :class:`LoadDetectorKwargs`: :class:`DetectionConfig`
            fields, and for transformer models
            ``device``, ``dtype``, ``revision``, ``local_files_only``, ``model_id``,
            ``backend`` (``"auto"``: ONNX Runtime on a CPU where the ``fast`` extra is
            installed, int8 where the CPU has VNNI and fp32 elsewhere, torch on GPUs;
            ``"onnx"`` forces ONNX Runtime, ``"torch"`` torch), ``trust_remote_code``
            (let a checkpoint that ships its own model code run it, e.g. LettuceDetect's
            EuroBERT models; off by default, and such a checkpoint is refused) and
            ``strategy``: ``"evidence"`` (judge each answer sentence against the context
            sentences selected for it; the default for the bundled model) or
            ``"windows"`` (scan every context window; the default for other models,
            LettuceDetect checkpoints were trained that way);
            for a service URL ``timeout_s``, ``retries``, ``on_error``
            (``"raise"`` or ``"unverifiable"``) and ``chunk_size``, while
            :class:`DetectionConfig` fields are checked against the service's.

    Returns:
        A detector; transformer weights are loaded once per process and shared.

    Raises:
        UnknownArgumentError: For an unknown option (with the closest known one).
        InvalidArgumentError: For an option of the wrong type or out of range
            (``threshold=True``, ``token_threshold=nan``, ``aggregation="mean"``).
        InvalidInputError: For an unknown ``strategy``.
        ModelNotAvailableError: If the model cannot be found or downloaded.
    """
    if config is not None and not isinstance(config, DetectionConfig):
        raise InvalidArgumentError(
            f"load_detector: config must be a DetectionConfig, got {kind(config)}"
        )
    name = os.fspath(model) if model is not None else "bundled"
    return DETECTOR_KINDS[detector_kind(name)].build(name, config, dict(options))


def _local(name: str, config: DetectionConfig | None, options: dict[str, Any]) -> Detector:
    """A detector that runs here: the lexical reference or a transformer model."""
    runs = runs_model(name)
    allowed = _CONFIG_FIELDS | (_LOAD_FIELDS if runs else frozenset())
    if not runs:
        # A model's loading options would be ignored by the lexical reference: refused.
        misplaced = sorted(
            k for k in options if k in _LOAD_FIELDS and options[k] not in (None, "auto")
        )
        if misplaced:
            raise InvalidInputError(
                f"option(s) {', '.join(misplaced)} apply to model detectors, not to {name!r}"
            )
        options = {k: v for k, v in options.items() if k not in _LOAD_FIELDS}
    reject_unknown(options, allowed, "load_detector")
    config = _with_overrides(config, {k: v for k, v in options.items() if k in _CONFIG_FIELDS})
    if not runs:
        from ._lexical import LexicalDetector

        return LexicalDetector(config=config)
    return _transformer(name, config, {k: v for k, v in options.items() if k in _LOAD_FIELDS})


def _with_overrides(
    config: DetectionConfig | None, overrides: dict[str, Any]
) -> DetectionConfig | None:
    if not overrides:
        return config
    base = config.model_dump() if config else {}
    return _config({**base, **overrides})


def _config(values: dict[str, Any]) -> DetectionConfig:
    """A detection config from ``values``, checked as strictly as the engine's options.

    Raises:
        InvalidArgumentError: Naming the option and what is wrong with its value
            (``threshold=True``, ``token_threshold=nan``, ``aggregation='mean'``).
    """
    try:
        return DetectionConfig(**values)
    except ValidationError as exc:
        raise InvalidArgumentError(describe_error(exc, "load_detector")) from None


def _transformer(
    name: str, config: DetectionConfig | None, load_options: dict[str, Any]
) -> Detector:
    """The evidence or window-scanning detector over a token-classification model."""
    strategy = load_options.pop("strategy", None) or (
        "evidence" if name == "bundled" else "windows"
    )
    if strategy not in _STRATEGIES:
        raise InvalidInputError(
            f"unknown strategy {strategy!r}; use one of: {', '.join(_STRATEGIES)}"
        )
    from ._evidence_detector import EvidenceDetector
    from ._transformer import TransformerDetector

    detector_class = EvidenceDetector if strategy == "evidence" else TransformerDetector
    if name == "bundled":
        path = _bundled_path()
        load_options.setdefault("model_id", "truthlens-bundled-detector")
        return detector_class(path, config=_bundled_config(config), **load_options)
    return detector_class(name, config=config, **load_options)


def _bundled_config(config: DetectionConfig | None) -> DetectionConfig:
    """The bundled model's defaults: the length-aware calibrated response score.

    Its token probabilities are calibrated, and its folder holds a response calibration
    that reads the largest of them with the answer's length, so the response score is the
    probability that the answer holds an unsupported claim for short and long answers
    alike; another aggregation can still be asked for.
    """
    if config is not None and "aggregation" in config.model_fields_set:
        return config
    base = config.model_dump(exclude_unset=True) if config else {}
    return DetectionConfig(**{**base, "aggregation": "calibrated"})


def _remote(url: str, config: DetectionConfig | None, options: dict[str, Any]) -> Detector:
    """A :class:`RemoteDetector`; model-loading options belong to the service."""
    from ._remote import RemoteDetector

    # The engine passes device=None / dtype="auto" / backend="auto" when nothing was asked for.
    unset = {k for k in ("device", "dtype", "backend") if options.get(k) in (None, "auto")}
    reject_unknown(
        [k for k in options if k not in _LOAD_FIELDS and k not in unset],
        _CONFIG_FIELDS | _REMOTE_FIELDS,
        "load_detector",
    )
    unknown = set(options) - _CONFIG_FIELDS - _REMOTE_FIELDS - unset
    if unknown:
        raise InvalidInputError(
            f"option(s) {', '.join(sorted(unknown))} do not apply to a service URL: the "
            "service loads the model; set them in the policy it is started with"
        )
    overrides = {k: v for k, v in options.items() if k in _CONFIG_FIELDS}
    if overrides:
        # Only the fields asked for are checked against the service's settings.
        base = config.model_dump(exclude_unset=True) if config else {}
        config = _config({**base, **overrides})
    client_options = {k: v for k, v in options.items() if k in _REMOTE_FIELDS}
    return RemoteDetector(url, config=config, **client_options)


def _bundled_path() -> str:
    try:
        from .._bundled import bundled_detector_path
    except ImportError as exc:
        raise ModelNotAvailableError(
            "this install has no bundled detector yet; pass a local model folder or a "
            "Hugging Face Hub id, e.g. load_detector('path/to/model')"
        ) from exc
    path: Path = bundled_detector_path()
    return os.fspath(path)


@dataclass(frozen=True)
class DetectorKind:
    """One kind of detector: how it is built and whether it runs a model here.

    Attributes:
        build: Builds it from its name, config and options.
        runs_model: Whether it loads a model in this process (the lexical reference and
            a service do not: device, precision and backend options do not apply).
    """

    build: Callable[[str, DetectionConfig | None, dict[str, Any]], Detector]
    runs_model: bool


#: Every kind of detector, by the kind :func:`detector_kind` reads from its name.
DETECTOR_KINDS: dict[str, DetectorKind] = {
    "lexical": DetectorKind(_local, runs_model=False),
    "service": DetectorKind(_remote, runs_model=False),
    "model": DetectorKind(_local, runs_model=True),
}


def detector_kind(model: str | os.PathLike[str] | None) -> str:
    """``lexical``, ``service`` (a ``truthlens serve`` URL) or ``model`` (any other name)."""
    name = os.fspath(model) if model is not None else "bundled"
    if name == "lexical":
        return "lexical"
    return "service" if is_service_url(name) else "model"


def runs_model(model: str | os.PathLike[str] | None) -> bool:
    """Whether the detector ``model`` names loads a model in this process."""
    return DETECTOR_KINDS[detector_kind(model)].runs_model
