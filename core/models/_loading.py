"""Load Hugging Face checkpoints once, from a local folder or the Hub: every model's loader.

The detector's token classifiers and the NLI and prompt classifiers' sequence classifiers
go through :func:`load_pretrained`: one cache per (source, task, device, dtype, revision),
one fail-fast check of the hub (an offline machine gets a clear error with the local-path
fix in seconds, not after a minute of retries), one validation of the tokenizer.

On the CPU a model may run on ONNX Runtime instead of torch (``backend``, see
:mod:`._onnx`): its graph is built from the folder's weights once and cached, and the
torch weights are then not loaded at all.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from .._calibration._file import check_response_map
from .._device import resolve_device, resolve_dtype
from .._errors import ConfigError, ModelLoadError, ModelNotAvailableError
from ._onnx import (
    OnnxModel,
    Quantization,
    export_graph,
    fusion_shape,
    load_graph,
    resolve_backend,
    weights_fingerprint,
)

if TYPE_CHECKING:
    import torch

__all__ = [
    "HFSequenceClassifier",
    "LoadedModel",
    "Task",
    "check_config_numbers",
    "clear_model_cache",
    "export_onnx",
    "load_pretrained",
    "load_sequence_classifier",
    "load_token_classifier",
    "no_load_bar",
    "sequence_probabilities",
]

logger = logging.getLogger(__name__)

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# Tokenizers report a huge sentinel when they have no limit of their own.
_NO_LIMIT = 1_000_000
# Seconds the hub connectivity probe may take. Without it an offline machine spent
# 46-53 s in the hub client's retries before the clear error.
_PROBE_TIMEOUT_S = 2.0
# A tokenizer much smaller than the model's embedding table belongs to another model
# (or is the near-empty stand-in transformers builds when the files are missing).
# Embedding tables are often padded (ModernBERT: 50,368 rows for 50,280 tokens), so
# only a large gap counts.
_MIN_VOCAB_SHARE = 0.5


Task = Literal["token", "sequence"]


@dataclass(frozen=True)
class LoadedModel:
    """A model and tokenizer loaded once and shared by every user that names them.

    With ``backend == "onnx"`` the model runs as ``graph`` and ``model`` is ``None``.
    """

    model_id: str
    model: Any
    tokenizer: Any
    device: torch.device
    dtype: torch.dtype
    max_length: int
    input_names: tuple[str, ...]
    config: Any
    backend: Literal["torch", "onnx"] = "torch"
    graph: OnnxModel | None = None
    # Fast tokenizers are not safe to call from several threads at once.
    tokenizer_lock: threading.Lock = field(default_factory=threading.Lock, compare=False)


_cache: dict[tuple[str, Task, str, str, str | None, str], LoadedModel] = {}
_cache_lock = threading.Lock()


def clear_model_cache() -> None:
    """Forget every loaded model, e.g. to free memory in a long-running process."""
    from ._onnx import clear_sessions

    with _cache_lock:
        _cache.clear()
    clear_sessions()


def load_pretrained(
    name: str | os.PathLike[str],
    *,
    task: Task,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    revision: str | None = None,
    local_files_only: bool | None = None,
    backend: str = "auto",
) -> LoadedModel:
    """Load (or reuse) a classification model and its tokenizer.

    Args:
        name: A local model directory, or a Hugging Face Hub id such as
            ``KRLabsOrg/lettucedect-base-modernbert-en-v1``.
        task: ``"token"`` (a hallucination detector, checked to be a two-class token
            classifier with a fast tokenizer) or ``"sequence"`` (an NLI model or a
            prompt classifier; the caller checks its labels).
        device: Where to run; ``None`` picks CUDA, then MPS, then the CPU.
        dtype: Precision; ``None`` picks bf16/fp16 on GPUs and fp32 on the CPU (the
            fp32 graph on the ONNX backend); ``"int8"`` asks for the ONNX int8 graph.
        revision: Hub revision (branch, tag or commit) for hub ids.
        local_files_only: Only use the local Hugging Face cache for hub ids.
        backend: ``"auto"`` (the ONNX fp32 graph for a local BERT-family folder on a
            CPU with onnxruntime installed, torch elsewhere or if the graph cannot be
            built), ``"torch"`` or ``"onnx"`` (a local BERT-family folder on the CPU).

    Returns:
        The shared, loaded model, in eval mode on ``device``.

    Raises:
        ModelNotAvailableError: If the folder does not exist and the hub cannot provide
            the id (offline, blocked, unknown repository).
        ModelLoadError: If the files exist but are not a usable model for ``task``.
        ConfigError: For an unknown backend, or ``"onnx"`` where it cannot run.
        MissingDependencyError: ``backend="onnx"`` without onnxruntime installed.
    """
    resolved_device = resolve_device(device)
    source = _resolve_source(name)
    local = Path(source).is_dir()
    chosen, quantization = resolve_backend(
        backend, resolved_device, dtype, model_type=_model_type(source), local=local
    )
    if chosen == "onnx":
        try:
            return _cached_load(
                source, task, resolved_device, None, revision, None, quantization=quantization
            )
        except ModelLoadError as exc:
            if backend != "auto":
                raise
            # auto chose the graph for speed; one that cannot be built or opened here
            # (read-only cache, a stale graph beside the weights) leaves torch, which
            # gives the same verdicts, and says why.
            logger.warning("running %s on torch: its ONNX graph is unavailable (%s)", source, exc)
    return _cached_load(
        source, task, resolved_device, dtype, revision, local_files_only, quantization=None
    )


def _cached_load(
    source: str,
    task: Task,
    device: torch.device,
    dtype: str | torch.dtype | None,
    revision: str | None,
    local_files_only: bool | None,
    quantization: Quantization | None,
) -> LoadedModel:
    """The shared model for one key: torch, or the ONNX graph ``quantization`` names."""
    resolved_dtype = resolve_dtype(device, "float32" if quantization else dtype)
    variant = f"onnx-{quantization}" if quantization else "torch"
    key = (source, task, str(device), str(resolved_dtype), revision, variant)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None:
            if quantization:
                cached = _load_onnx(source, task, device, quantization)
            else:
                cached = _load(source, task, device, resolved_dtype, revision, local_files_only)
            _cache[key] = cached
    return cached


def _model_type(source: str) -> str | None:
    """``config.json``'s ``model_type`` for a local folder (``None`` for hub ids)."""
    value = _config_field(Path(source), "model_type")
    return value if isinstance(value, str) else None


def _config_field(folder: Path, name: str) -> Any:
    config = folder / "config.json"
    if not config.is_file():
        return None
    try:
        return json.loads(config.read_text(encoding="utf-8")).get(name)
    except (OSError, ValueError, AttributeError):
        return None


def load_token_classifier(
    name: str | os.PathLike[str],
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    revision: str | None = None,
    local_files_only: bool | None = None,
    backend: str = "auto",
) -> LoadedModel:
    """A two-class token classifier (a detector): :func:`load_pretrained` with ``task="token"``."""
    return load_pretrained(
        name,
        task="token",
        device=device,
        dtype=dtype,
        revision=revision,
        local_files_only=local_files_only,
        backend=backend,
    )


def load_sequence_classifier(
    name: str | os.PathLike[str],
    *,
    device: str | torch.device | None = None,
    dtype: str | torch.dtype | None = None,
    local_files_only: bool | None = None,
    backend: str = "auto",
) -> LoadedModel:
    """A sequence classifier (NLI, prompt classifier): ``load_pretrained(task="sequence")``."""
    return load_pretrained(
        name,
        task="sequence",
        device=device,
        dtype=dtype,
        local_files_only=local_files_only,
        backend=backend,
    )


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


def _hub_unavailable(
    model_id: str, exc: BaseException, *, why: str | None = None
) -> ModelNotAvailableError:
    why = why or f"{type(exc).__name__}: {exc}"
    return ModelNotAvailableError(
        f"could not load {model_id!r} from the Hugging Face Hub ({why}). "
        "If this machine cannot reach the hub, download the model where it can "
        f"(`hf download {model_id} --local-dir ./{model_id.rsplit('/', 1)[-1]}`), copy the "
        "folder here and pass its path instead of the hub id, e.g. "
        f"load_detector('./{model_id.rsplit('/', 1)[-1]}') or --model PATH."
    )


def _load(
    source: str,
    task: Task,
    device: torch.device,
    dtype: torch.dtype,
    revision: str | None,
    local_files_only: bool | None,
) -> LoadedModel:
    is_local = Path(source).is_dir()
    tokenizer, model, info = _from_pretrained(source, task, dtype, revision, local_files_only)
    check_config_numbers(source, model.config.to_dict())
    _check_weights(source, task, model, info)
    _check_tokenizer(source, tokenizer, model.config, is_local=is_local, task=task)
    model.to(device).eval()
    logger.info("loaded %s classifier %s on %s (%s)", task, source, device, dtype)
    return LoadedModel(
        model_id=source,
        model=model,
        tokenizer=tokenizer,
        device=device,
        dtype=dtype,
        max_length=_window(model.config, tokenizer),
        input_names=tuple(tokenizer.model_input_names),
        config=model.config,
    )


def _check_weights(source: str, task: Task, model: Any, info: dict[str, Any]) -> None:
    if task == "token":
        _check_model(source, model, info)
    else:
        _check_sequence_model(source, model.config)


def graph_outputs(task: Task) -> tuple[str, ...]:
    """What a task's ONNX graph returns: a detector's graph also gives the encoder states."""
    return ("logits", "last_hidden_state") if task == "token" else ("logits",)


def _weight_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("model*.safetensors")) or sorted(folder.glob("pytorch_model*.bin"))
    if not files:
        raise ModelLoadError(f"{folder} holds no model weights (model.safetensors)")
    return [*files, folder / "config.json"]


def _load_onnx(
    source: str, task: Task, device: torch.device, quantization: Quantization
) -> LoadedModel:
    """The ONNX Runtime twin of :func:`_load`: tokenizer, config and a shared graph.

    The torch weights are read only when the graph has to be built; the checks they
    pass (labels, missing parameters) run then, and the graph is only ever used with
    the weights it was built from.
    """
    import torch
    from transformers import AutoConfig, AutoTokenizer

    folder = Path(source)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        config = AutoConfig.from_pretrained(source)
    except Exception as exc:
        raise ModelLoadError(f"could not load the model in {source}: {exc}") from exc
    input_names = tuple(tokenizer.model_input_names)

    def build(path: Path) -> Path:
        _, model, info = _from_pretrained(source, task, torch.float32, None, None)
        _check_weights(source, task, model, info)
        return export_graph(
            model_module(model.eval(), input_names, task),
            path,
            inputs=input_names,
            outputs=graph_outputs(task),
            fingerprint=fingerprint,
            quantization=quantization,
            fuse=fusion_shape(model.config),
        )

    check_config_numbers(source, config.to_dict())
    if task == "token":
        _check_config(source, config)
    else:
        _check_sequence_model(source, config)
    fingerprint = weights_fingerprint(*_weight_files(folder))
    graph = load_graph(folder, fingerprint, quantization, build)
    _check_tokenizer(source, tokenizer, config, is_local=True, task=task)
    logger.info("loaded %s classifier %s on ONNX Runtime (%s)", task, source, quantization)
    return LoadedModel(
        model_id=source,
        model=None,
        tokenizer=tokenizer,
        device=device,
        dtype=torch.float32,
        max_length=_window(config, tokenizer),
        input_names=input_names,
        config=config,
        backend="onnx",
        graph=graph,
    )


def export_onnx(
    folder: str | os.PathLike[str], quantizations: Sequence[Quantization] = ("fp32", "int8")
) -> list[Path]:
    """Build a model folder's ONNX graphs beside its weights (``FOLDER/onnx/``).

    A graph already there is replaced, so running this after retraining refreshes it.
    Graphs carry the fingerprint of the weights they were built from; the loaders
    refuse one that does not match the folder's weights.

    Args:
        folder: A local token- or sequence-classification model folder.
        quantizations: Which graphs to build.

    Returns:
        The graph files written.

    Raises:
        ModelLoadError: If the folder is not a usable model or a graph cannot be built.
        ConfigError: If ``folder`` is not a local folder.
        MissingDependencyError: Without onnxruntime and onnx installed.
    """
    import torch

    from .._errors import ConfigError
    from ._onnx import graph_path

    source = _resolve_source(folder)
    if not Path(source).is_dir():
        raise ConfigError(f"{source!r} is not a local model folder; ONNX graphs are built from one")
    path = Path(source)
    architectures = _config_field(path, "architectures") or []
    task: Task = "token"
    if any(str(a).endswith("ForSequenceClassification") for a in architectures):
        task = "sequence"
    fingerprint = weights_fingerprint(*_weight_files(path))
    tokenizer, model, info = _from_pretrained(source, task, torch.float32, None, None)
    _check_weights(source, task, model, info)
    names = tuple(tokenizer.model_input_names)
    return [
        export_graph(
            model_module(model.eval(), names, task),
            graph_path(path, quantization),
            inputs=names,
            outputs=graph_outputs(task),
            fingerprint=fingerprint,
            quantization=quantization,
            fuse=fusion_shape(model.config),
        )
        for quantization in quantizations
    ]


def model_module(model: Any, input_names: Sequence[str], task: Task) -> Any:
    """A torch module with positional inputs and a tuple of outputs, for the ONNX export."""
    import torch

    names = tuple(input_names)
    with_states = task == "token"

    class _Export(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
            feeds = dict(zip(names, tensors, strict=True))
            out = self.inner(**feeds, output_hidden_states=with_states)
            if not with_states:
                return (out.logits,)
            if out.hidden_states:
                return out.logits, out.hidden_states[-1]
            # a model without transformer layers reports no hidden states
            return out.logits, self.inner.base_model(**feeds).last_hidden_state

    return _Export().eval()


@contextmanager
def no_load_bar(hide: bool = True) -> Iterator[None]:
    """Hide transformers' "Loading weights" bar while a local folder's weights load.

    Reading a few local files is not progress a user waits on, and the bar would print
    into every application's console on its first guarded answer. A hub download keeps
    its bars (``hide=False``); a caller who disabled them keeps that.
    """
    if not hide:
        yield
        return
    from transformers.utils import logging as transformers_logging

    shown = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if shown:
            transformers_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _from_pretrained(
    source: str, task: Task, dtype: torch.dtype, revision: str | None, local: bool | None
) -> tuple[Any, Any, dict[str, Any]]:
    """Tokenizer, model and loading info; a failure says whether the hub or the files failed."""
    from transformers import (
        AutoModelForSequenceClassification,
        AutoModelForTokenClassification,
        AutoTokenizer,
    )

    auto: Any = AutoModelForTokenClassification
    if task == "sequence":
        auto = AutoModelForSequenceClassification
    is_local = Path(source).is_dir()
    hub_kwargs: dict[str, Any] = {}
    if not is_local:
        hub_kwargs = {"revision": revision, "local_files_only": _offline(local)}
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **hub_kwargs)
        with no_load_bar(is_local):
            model, info = auto.from_pretrained(
                source, dtype=dtype, output_loading_info=True, **hub_kwargs
            )
    except Exception as exc:
        if not is_local:
            why = None
            if local:
                why = "local_files_only=True and the model is not in the local cache"
            elif hub_kwargs["local_files_only"]:
                why = (
                    "the hub is not reachable from this machine (or HF_HUB_OFFLINE is set) "
                    "and the model is not in the local Hugging Face cache"
                )
            raise _hub_unavailable(source, exc, why=why) from exc
        hint = ""
        if "mismatched" in str(exc):
            hint = " (config.json does not match the weights' shapes: it belongs to another model)"
        raise ModelLoadError(f"could not load the model in {source}{hint}: {exc}") from exc
    return tokenizer, model, info


# The Platt calibration's numbers: a scale of 0 or below would flatten or invert every
# token probability. (The response map is read by the rules every map is read by:
# ``core/_calibration.py``, ``check_response_map``.)
_PLATT = ("scale", "shift", "span_shift")


def _numbers(value: object, path: str) -> list[tuple[str, object]]:
    """Every number (and the path to it) inside a config value."""
    if isinstance(value, dict):
        return [n for k, v in value.items() for n in _numbers(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in _numbers(v, f"{path}[{i}]")]
    if isinstance(value, float | int) and not isinstance(value, bool):
        return [(path, value)]
    return []


def _is_number(value: object) -> bool:
    return isinstance(value, float | int) and not isinstance(value, bool)


def check_config_numbers(source: str, config: dict[str, Any]) -> None:
    """Refuse a model whose ``config.json`` carries a number that cannot be right.

    Every number must be finite (a NaN calibration made every answer "supported" with
    score 0); the Platt calibration must hold numbers, its scale above 0; the response
    map is read by the rules every map is read by (``check_response_map``: the token
    weight at or above 0).

    Args:
        source: The model folder or hub id, for the message.
        config: The model's configuration as a dict.

    Raises:
        ModelLoadError: Naming the file and the key.
    """
    where = f"{source}/config.json" if Path(source).is_dir() else f"config.json of {source}"
    for path, value in _numbers(config, ""):
        if not math.isfinite(float(value)):  # type: ignore[arg-type]
            raise ModelLoadError(f"{where}: {path} is {value}; expected a finite number")
    extra = config.get("truthlens")
    if not isinstance(extra, dict):
        return
    response = extra.get("response_calibration")
    if response is not None:
        try:
            check_response_map(
                response, where=f"{where}: truthlens.response_calibration", in_file=False
            )
        except ConfigError as exc:
            raise ModelLoadError(str(exc)) from None
    platt = extra.get("calibration")
    if platt is None:
        return
    if not isinstance(platt, dict):
        raise ModelLoadError(f"{where}: truthlens.calibration must be a mapping of numbers")
    for key in _PLATT:
        value = platt.get(key)
        if key in platt and not _is_number(value):
            raise ModelLoadError(
                f"{where}: truthlens.calibration.{key} is {value!r}; expected a number"
            )
    scale = platt.get("scale")
    if scale is not None and scale <= 0:
        raise ModelLoadError(
            f"{where}: truthlens.calibration.scale is {scale}; expected a number above 0"
        )


def _offline(local_files_only: bool | None) -> bool:
    """Whether to use only the local cache for a hub id.

    An explicit ``local_files_only`` wins; otherwise ``HF_HUB_OFFLINE`` or a failed
    connectivity probe (a few seconds at most) mean offline, so the hub client's
    retries never run on a machine that cannot reach the hub.
    """
    if local_files_only is not None:
        return local_files_only
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return True
    return not _hub_reachable()


def _hub_reachable(timeout_s: float = _PROBE_TIMEOUT_S) -> bool:
    """Whether a TCP connection to the Hugging Face endpoint opens within ``timeout_s``.

    The connection (name lookup included, which a socket timeout does not bound) runs
    in a daemon thread, so the answer comes within ``timeout_s`` whatever the network
    does. With a proxy configured the direct probe says nothing, so it reports
    reachable and leaves the decision to the hub client.
    """
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    from huggingface_hub import constants

    endpoint = urlsplit(constants.ENDPOINT)
    host = endpoint.hostname or "huggingface.co"
    port = endpoint.port or (80 if endpoint.scheme == "http" else 443)
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                result.append(True)
        except Exception:  # noqa: BLE001 - any failure (DNS, refused, blocked) is "offline"
            result.append(False)

    worker = threading.Thread(target=probe, name="truthlens-hub-probe", daemon=True)
    worker.start()
    worker.join(timeout_s)
    reachable = bool(result and result[0])
    if not reachable:
        logger.info("the Hugging Face Hub (%s:%s) is not reachable; using the cache", host, port)
    return reachable


def _check_model(source: str, model: Any, info: dict[str, Any]) -> None:
    """Refuse checkpoints that are not a two-class token classifier with all its weights.

    ``from_pretrained`` fills weights the checkpoint lacks with random values and only
    logs a warning, so a ``config.json`` of another architecture (whose parameter
    names match nothing in the weights) loaded and answered at random.
    """
    config = model.config
    _check_config(source, config)
    missing = sorted(info.get("missing_keys") or ())
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        raise ModelLoadError(
            f"{source}: the weights do not match config.json ({config.model_type}); "
            f"{len(missing)} parameters are missing from the checkpoint ({shown}). "
            "config.json probably belongs to another model"
        )


def _check_config(source: str, config: Any) -> None:
    """The checks a token classifier's config must pass (architecture, labels)."""
    _check_architecture(
        source,
        config,
        "ForTokenClassification",
        "a token classifier; a hallucination detector labels every answer token",
    )
    if config.num_labels != 2:
        raise ModelLoadError(
            f"{source} has {config.num_labels} labels; a hallucination detector has 2 "
            "(0 = supported, 1 = hallucinated)"
        )
    _check_labels(source, config)


# Label names that say which class is which, normalised (lower case, letters only).
# "unsupported" is tested before "supported": it contains it.
_HALLUCINATED_WORDS = ("hallucinat", "unsupported", "unfaithful", "inconsistent", "notsupported")
_SUPPORTED_WORDS = ("supported", "faithful", "grounded", "consistent", "nohallucination")


def _label_meaning(name: object) -> str | None:
    """``"hallucinated"``, ``"supported"`` or ``None`` (e.g. ``LABEL_0``) for a label name."""
    text = "".join(ch for ch in str(name).lower() if ch.isalpha())
    if text.startswith(("no", "not")) and "hallucinat" in text:
        return "supported"
    if any(word in text for word in _HALLUCINATED_WORDS):
        return "hallucinated"
    if any(word in text for word in _SUPPORTED_WORDS):
        return "supported"
    return None


def _check_labels(source: str, config: Any) -> None:
    """Refuse a head whose named labels say class 1 is not "hallucinated".

    The detector reads class 1 as hallucinated; a checkpoint with the classes the
    other way round would pass every hallucination and flag every supported token.
    Unnamed labels (``LABEL_0`` / ``LABEL_1``, as many checkpoints have) are accepted.
    """
    labels = getattr(config, "id2label", None) or {}
    meanings = {str(k): _label_meaning(v) for k, v in labels.items()}
    if meanings.get("1") == "supported" or meanings.get("0") == "hallucinated":
        raise ModelLoadError(
            f"{source}: its labels are {labels}, but a hallucination "
            "detector needs 0 = supported and 1 = hallucinated; this head's classes are "
            "the other way round"
        )


def _check_sequence_model(source: str, config: Any) -> None:
    """Refuse a checkpoint saved as something other than a sequence classifier."""
    _check_architecture(source, config, "ForSequenceClassification", "a sequence classifier")


def _check_architecture(source: str, config: Any, suffix: str, expected: str) -> None:
    """Refuse a config whose named architectures all lack ``suffix`` (none named: accepted)."""
    architectures = getattr(config, "architectures", None) or []
    if architectures and not any(a.endswith(suffix) for a in architectures):
        raise ModelLoadError(
            f"{source} was saved as {', '.join(architectures)}, not {expected} (...{suffix})"
        )


def _check_tokenizer(
    source: str, tokenizer: Any, config: Any, *, is_local: bool, task: Task
) -> None:
    """Refuse a missing or foreign tokenizer (it would map every word wrongly).

    A detector also needs a fast tokenizer (character offsets) and a separator token
    (its input is context [SEP] answer).
    """
    if is_local:
        names = set(getattr(tokenizer, "vocab_files_names", {}).values()) or {"tokenizer.json"}
        if not any((Path(source) / name).is_file() for name in names):
            raise ModelLoadError(
                f"{source} holds no tokenizer files (expected one of "
                f"{', '.join(sorted(names))}); copy the tokenizer saved with the model"
            )
    _check_vocabulary(source, tokenizer, config)
    if task != "token":
        return
    if not getattr(tokenizer, "is_fast", False):
        raise ModelLoadError(
            f"{source} has no fast tokenizer (tokenizer.json); character offsets need one"
        )
    if tokenizer.sep_token_id is None and tokenizer.eos_token_id is None:
        raise ModelLoadError(
            f"{source}: the tokenizer has no separator token; the detector's input is "
            "context [SEP] answer"
        )


def _check_vocabulary(source: str, tokenizer: Any, config: Any) -> None:
    rows = getattr(config, "vocab_size", None)
    if not isinstance(rows, int) or rows <= 0:
        return
    tokens = len(tokenizer)
    if tokens > rows or tokens < _MIN_VOCAB_SHARE * rows:
        raise ModelLoadError(
            f"{source}: the tokenizer has {tokens:,} tokens but the model's embedding table "
            f"{rows:,} rows; the tokenizer belongs to another model"
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


def sequence_probabilities(
    loaded: LoadedModel,
    texts: Sequence[tuple[str, str | None]],
    *,
    batch_size: int,
    max_length: int,
    truncation: bool | str = True,
    logits: Callable[[Any], Any] | None = None,
) -> list[list[float]]:
    """Class probabilities of a sequence classifier per text (or text pair), in input order.

    Inputs are batched by length, so a batch pads little.

    Args:
        loaded: A model from :func:`load_sequence_classifier`.
        texts: ``(first, second)`` pairs; ``second`` is ``None`` for single texts (then
            it must be ``None`` for all).
        batch_size: Inputs per forward pass.
        max_length: Token limit per input.
        truncation: The tokenizer's truncation rule (``"only_first"`` cuts premises).
        logits: Maps a batch's encoding (torch tensors on the model's device, or
            int64 numpy arrays on the ONNX backend) to class logits; ``None`` uses the
            model's own head.

    Returns:
        One probability row per input.
    """
    order = sorted(range(len(texts)), key=lambda i: len(texts[i][0]) + len(texts[i][1] or ""))
    rows: list[list[float]] = [[] for _ in texts]
    onnx = loaded.graph is not None
    if loaded.graph is not None and loaded.graph.rows_per_run is not None:
        batch_size = min(batch_size, loaded.graph.rows_per_run)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        seconds = [texts[i][1] for i in idx]
        with loaded.tokenizer_lock:
            encoded = loaded.tokenizer(
                [texts[i][0] for i in idx],
                None if seconds[0] is None else seconds,
                truncation=truncation,
                max_length=max_length,
                padding=True,
                return_tensors="np" if onnx else "pt",
            )
        probs = (
            _onnx_probabilities(loaded, encoded, logits)
            if onnx
            else _torch_probabilities(loaded, encoded, logits)
        )
        for i, row in zip(idx, probs, strict=True):
            rows[i] = row
    return rows


def _torch_probabilities(
    loaded: LoadedModel, encoded: Any, logits: Callable[[Any], Any] | None
) -> list[list[float]]:
    import torch

    with torch.inference_mode():
        encoded = encoded.to(loaded.device)
        scores = logits(encoded) if logits else loaded.model(**encoded).logits
    result: list[list[float]] = torch.softmax(scores.float(), dim=-1).cpu().tolist()
    return result


def _onnx_probabilities(
    loaded: LoadedModel, encoded: Any, logits: Callable[[Any], Any] | None
) -> list[list[float]]:
    import numpy as np

    assert loaded.graph is not None  # an onnx LoadedModel always has one
    feeds = {k: np.asarray(v, dtype=np.int64) for k, v in encoded.items()}
    scores = logits(feeds) if logits else loaded.graph.run(feeds, ["logits"])[0]
    scores = np.asarray(scores, dtype=np.float64)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    result: list[list[float]] = (scores / scores.sum(axis=-1, keepdims=True)).tolist()
    return result


class HFSequenceClassifier:
    """A Hugging Face sequence classifier, loaded through the shared cache.

    The base of the NLI explainer and the prompt classifier backends: they differ only
    in how they read the model's labels.

    Args:
        model: A local model folder or a hub id (needs the hub or its local cache).
        device: Where to run; ``None`` picks automatically.
        dtype: Precision; ``None``/``"auto"`` picks bf16/fp16 on GPUs and fp32 on the CPU.
        batch_size: Inputs per forward pass (sorted by length first); ``None`` is the
            class's ``default_batch_size``.
        max_length: Token limit per input; longer inputs are cut.
        local_files_only: Only use the local Hugging Face cache for hub ids.
        backend: ``"auto"``, ``"torch"`` or ``"onnx"`` (see :func:`load_pretrained`).

    Raises:
        ModelNotAvailableError: If the model cannot be found or downloaded.
        ModelLoadError: If it is not a sequence classifier, or its labels do not fit
            (see :meth:`_read_labels`).
    """

    default_batch_size = 16

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        batch_size: int | None = None,
        max_length: int = 256,
        local_files_only: bool | None = None,
        backend: str = "auto",
    ) -> None:
        self._loaded = load_sequence_classifier(
            model,
            device=device,
            dtype=dtype,
            local_files_only=local_files_only,
            backend=backend,
        )
        self.device = self._loaded.device
        self.model_id = os.fspath(model)
        self.batch_size = batch_size or self.default_batch_size
        self.max_length = max_length
        self._read_labels(dict(self._loaded.config.id2label))

    def _read_labels(self, id2label: dict[int, str]) -> None:
        """Check and keep what the model's class names mean (raises ModelLoadError)."""

    def _probabilities(
        self, texts: Sequence[tuple[str, str | None]], truncation: bool | str = True
    ) -> list[list[float]]:
        return sequence_probabilities(
            self._loaded,
            texts,
            batch_size=self.batch_size,
            max_length=self.max_length,
            truncation=truncation,
        )
