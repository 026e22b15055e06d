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
import os
import re
import socket
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, Unpack
from urllib.parse import urlsplit

from .._device import resolve_device, resolve_dtype
from .._errors import ConfigError, InvalidArgumentError, ModelLoadError, ModelNotAvailableError
from ._checks import (
    Task,
    check_config,
    check_config_numbers,
    check_model,
    check_sequence_model,
    check_tokenizer,
    token_window,
)
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
    "LoadOptions",
    "LoadedModel",
    "Task",
    "clear_model_cache",
    "export_onnx",
    "load_pretrained",
    "load_sequence_classifier",
    "load_token_classifier",
    "no_load_bar",
]

logger = logging.getLogger(__name__)

# Seconds the hub connectivity probe may take. Without it an offline machine spent
# 46-53 s in the hub client's retries before the clear error.
_PROBE_TIMEOUT_S = 2.0
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


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


# The key's last part names the variant: torch or an ONNX graph, and whether the
# checkpoint's own code was allowed (a model loaded with it is never handed to a caller
# who did not opt in).
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
    trust_remote_code: bool = False,
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
        trust_remote_code: Let a checkpoint that ships its own code (an ``auto_map``, a
            ``model_type`` transformers lacks) run it; off by default: it is refused.

    Returns:
        The shared, loaded model, in eval mode on ``device``.

    Raises:
        ModelNotAvailableError: If the folder does not exist and the hub cannot provide
            the id (offline, blocked, unknown repository).
        ModelLoadError: If the files exist but are not a usable model for ``task``, or
            the checkpoint needs its own code and ``trust_remote_code`` is not set.
        InvalidArgumentError: If ``trust_remote_code`` is not a bool.
        ConfigError: For an unknown backend, or ``"onnx"`` where it cannot run.
        MissingDependencyError: ``backend="onnx"`` without onnxruntime installed.
    """
    where = resolve_device(device)
    source = _resolve_source(name)
    trusted = _checked_opt_in(trust_remote_code, source)
    local = Path(source).is_dir()
    chosen, quantization = resolve_backend(
        backend, where, dtype, model_type=_model_type(source), local=local
    )
    if chosen == "onnx":
        try:
            return _cached_load(source, task, where, None, revision, None, trusted, quantization)
        except ModelLoadError as exc:
            if backend != "auto":
                raise
            # auto chose the graph for speed; one that cannot be built or opened here
            # (read-only cache, a stale graph beside the weights) leaves torch, which
            # gives the same verdicts, and says why.
            logger.warning("running %s on torch: its ONNX graph is unavailable (%s)", source, exc)
    return _cached_load(source, task, where, dtype, revision, local_files_only, trusted)


def _checked_opt_in(trust_remote_code: object, source: str) -> bool:
    """The opt-in as a bool; a local folder that needs its own code is refused without it."""
    if not isinstance(trust_remote_code, bool):
        raise InvalidArgumentError(
            f"trust_remote_code must be True or False, got {trust_remote_code!r}"
        )
    if not trust_remote_code and Path(source).is_dir():
        _refuse_remote_code(source)
    return trust_remote_code


def _cached_load(
    source: str,
    task: Task,
    device: torch.device,
    dtype: str | torch.dtype | None,
    revision: str | None,
    local_files_only: bool | None,
    trust_remote_code: bool,
    quantization: Quantization | None = None,
) -> LoadedModel:
    """The shared model for one key: torch, or the ONNX graph ``quantization`` names."""
    resolved_dtype = resolve_dtype(device, "float32" if quantization else dtype)
    variant = f"onnx-{quantization}" if quantization else "torch"
    if trust_remote_code:
        variant += "+remote-code"
    key = (source, task, str(device), str(resolved_dtype), revision, variant)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is None:
            if quantization:
                cached = _load_onnx(source, task, device, quantization, trust_remote_code)
            else:
                cached = _load(
                    source,
                    task,
                    device,
                    resolved_dtype,
                    revision,
                    local_files_only,
                    trust_remote_code,
                )
            _cache[key] = cached
    return cached


def _model_type(source: str) -> str | None:
    """``config.json``'s ``model_type`` for a local folder (``None`` for hub ids)."""
    value = _config_field(Path(source), "model_type")
    return value if isinstance(value, str) else None


def _refuse_remote_code(source: str) -> None:
    """Refuse a local checkpoint that needs its own code, before transformers reads it.

    Raises:
        ModelLoadError: Naming ``trust_remote_code=True``, if ``config.json`` maps
            classes to the folder's own modules (``auto_map``) or names a
            ``model_type`` transformers does not know.
    """
    folder = Path(source)
    if _config_field(folder, "auto_map"):
        raise ModelLoadError(_remote_code_message(source, "its config.json has an auto_map"))
    model_type = _config_field(folder, "model_type")
    if isinstance(model_type, str) and not _known_model_type(model_type):
        raise ModelLoadError(
            _remote_code_message(
                source, f"its model_type {model_type!r} is not one this transformers knows"
            )
        )


def _known_model_type(model_type: str) -> bool:
    from transformers import CONFIG_MAPPING

    return model_type in CONFIG_MAPPING


def _remote_code_message(source: str, why: str) -> str:
    return (
        f"{source} needs its own model code to load ({why}); checkpoint code is never run "
        "unless asked for. If you trust it, pass trust_remote_code=True (with a pinned "
        "revision for a hub id); otherwise use a checkpoint transformers loads itself"
    )


def _config_field(folder: Path, name: str) -> Any:
    config = folder / "config.json"
    if not config.is_file():
        return None
    try:
        return json.loads(config.read_text(encoding="utf-8")).get(name)
    except (OSError, ValueError, AttributeError):
        return None


class LoadOptions(TypedDict, total=False):
    """The keyword arguments :func:`load_pretrained` takes besides the task.

    Attributes:
        device: Where the model runs (see :func:`load_pretrained`).
        dtype: Its weights' precision.
        revision: A hub revision.
        local_files_only: Never reach the hub.
        backend: ``"auto"``, ``"torch"`` or ``"onnx"``.
        trust_remote_code: Let a checkpoint that ships its own code run it.
    """

    device: str | torch.device | None
    dtype: str | torch.dtype | None
    revision: str | None
    local_files_only: bool | None
    backend: str
    trust_remote_code: bool


def load_token_classifier(
    name: str | os.PathLike[str], **options: Unpack[LoadOptions]
) -> LoadedModel:
    """A two-class token classifier (a detector): :func:`load_pretrained` with ``task="token"``."""
    return load_pretrained(name, task="token", **options)


def load_sequence_classifier(
    name: str | os.PathLike[str], **options: Unpack[LoadOptions]
) -> LoadedModel:
    """A sequence classifier (NLI, prompt classifier): ``load_pretrained(task="sequence")``."""
    return load_pretrained(name, task="sequence", **options)


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
    trust_remote_code: bool,
) -> LoadedModel:
    is_local = Path(source).is_dir()
    tokenizer, model, info = _from_pretrained(
        source, task, dtype, revision, local_files_only, trust_remote_code=trust_remote_code
    )
    check_config_numbers(source, model.config.to_dict())
    _check_weights(source, task, model, info)
    check_tokenizer(source, tokenizer, model.config, is_local=is_local, task=task)
    model.to(device).eval()
    logger.info("loaded %s classifier %s on %s (%s)", task, source, device, dtype)
    return LoadedModel(
        model_id=source,
        model=model,
        tokenizer=tokenizer,
        device=device,
        dtype=dtype,
        max_length=token_window(model.config, tokenizer),
        input_names=tuple(tokenizer.model_input_names),
        config=model.config,
    )


def _check_weights(source: str, task: Task, model: Any, info: dict[str, Any]) -> None:
    if task == "token":
        check_model(source, model, info)
    else:
        check_sequence_model(source, model.config)


def graph_outputs(task: Task) -> tuple[str, ...]:
    """What a task's ONNX graph returns: a detector's graph also gives the encoder states."""
    return ("logits", "last_hidden_state") if task == "token" else ("logits",)


def _weight_files(folder: Path) -> list[Path]:
    files = sorted(folder.glob("model*.safetensors")) or sorted(folder.glob("pytorch_model*.bin"))
    if not files:
        raise ModelLoadError(f"{folder} holds no model weights (model.safetensors)")
    return [*files, folder / "config.json"]


def _load_onnx(
    source: str,
    task: Task,
    device: torch.device,
    quantization: Quantization,
    trust_remote_code: bool = False,
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
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=trust_remote_code)
        config = AutoConfig.from_pretrained(source, trust_remote_code=trust_remote_code)
    except Exception as exc:
        raise ModelLoadError(f"could not load the model in {source}: {exc}") from exc
    input_names = tuple(tokenizer.model_input_names)

    def build(path: Path) -> Path:
        _, model, info = _from_pretrained(
            source, task, torch.float32, None, None, trust_remote_code=trust_remote_code
        )
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
        check_config(source, config)
    else:
        check_sequence_model(source, config)
    fingerprint = weights_fingerprint(*_weight_files(folder))
    graph = load_graph(folder, fingerprint, quantization, build)
    check_tokenizer(source, tokenizer, config, is_local=True, task=task)
    logger.info("loaded %s classifier %s on ONNX Runtime (%s)", task, source, quantization)
    return LoadedModel(
        model_id=source,
        model=None,
        tokenizer=tokenizer,
        device=device,
        dtype=torch.float32,
        max_length=token_window(config, tokenizer),
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
    source: str,
    task: Task,
    dtype: torch.dtype,
    revision: str | None,
    local: bool | None,
    *,
    trust_remote_code: bool = False,
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
    # Always an explicit bool: left unset, transformers asks on a terminal instead.
    hub_kwargs["trust_remote_code"] = trust_remote_code
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **hub_kwargs)
        with no_load_bar(is_local):
            model, info = auto.from_pretrained(
                source, dtype=dtype, output_loading_info=True, **hub_kwargs
            )
    except Exception as exc:
        if not trust_remote_code and "trust_remote_code" in str(exc):
            # A hub checkpoint that ships its own code (a local one is refused earlier).
            raise ModelLoadError(
                _remote_code_message(source, "the checkpoint ships custom code")
            ) from exc
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
    if not trust_remote_code and getattr(model.config, "auto_map", None):
        # transformers loads its own class when it has one and ignores the checkpoint's
        # code; the checkpoint still says it needs that code, so it is asked for alike
        # from a hub id and from a folder.
        raise ModelLoadError(_remote_code_message(source, "its config.json has an auto_map"))
    return tokenizer, model, info


# The Platt calibration's numbers: a scale of 0 or below would flatten or invert every
# token probability. (The response map is read by the rules every map is read by:
# ``core/_calibration.py``, ``check_response_map``.)
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
