"""The ONNX Runtime backend: encoder graphs built from the shipped weights, run on the CPU.

A graph is exported from a model folder's weights (``torch.onnx.export``), optionally
quantized to int8 (ONNX Runtime dynamic quantization), and stored with the fingerprint of
the weights it was built from (SHA-256 of ``model.safetensors`` and ``config.json``, in
the graph's metadata), and with the SHA-256 of the graph file itself beside it
(``NAME.Q.onnx.sha256``): the metadata says which weights a graph was built from, the
checksum that the graph is still the one built (an edited graph keeps its metadata; a
truncated one fails to open). Graphs live beside the weights (``FOLDER/onnx/``, written by
``truthlens export-onnx FOLDER``) or in the user cache (``~/.cache/truthlens/onnx``, keyed
by the fingerprint, written at first use). A graph beside the weights whose fingerprint or
checksum does not match is refused (the error names the command that rebuilds it: the
package does not rewrite files in a model folder); one in the cache is rebuilt, with a
warning. A graph is never used for weights it was not built from.

Sessions are created once per process per graph and shared; their intra-op threads are
the cores this process may run on, at most.

onnxruntime and onnx are imported lazily, only when the backend is used.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import logging
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._device import cpu_has_int8_dot_product
from .._errors import ConfigError, MissingDependencyError, ModelLoadError

if TYPE_CHECKING:
    import numpy as np
    import torch

__all__ = [
    "BACKENDS",
    "Backend",
    "OnnxModel",
    "Quantization",
    "cache_dir",
    "default_quantization",
    "export_graph",
    "fusion_shape",
    "graph_path",
    "load_graph",
    "onnx_available",
    "resolve_backend",
    "weights_fingerprint",
]

logger = logging.getLogger(__name__)

Backend = Literal["auto", "torch", "onnx"]
Quantization = Literal["fp32", "int8"]
BACKENDS: tuple[str, ...] = ("auto", "torch", "onnx")


def default_quantization() -> Quantization:
    """The graph run when no precision is asked for: int8 where it was measured, else fp32.

    int8 held every figure it was judged by (select-role AUROC within 0.005 of fp32, false
    alarms and the phenomena suite within a point or two; the results page) on a CPU with
    VNNI, at 0.6x the guard's time; on others ONNX Runtime's int8 kernels may saturate, so
    fp32 runs there. The fp32 graph gives torch's spans on every answer measured.
    """
    return "int8" if cpu_has_int8_dot_product() else "fp32"


# Model families whose export is checked against torch (tests, the onnx benchmark).
# ``backend="auto"`` uses ONNX only for them; others can still be forced.
_VERIFIED_TYPES = frozenset({"bert"})
# Bumped when the export recipe changes, so graphs from an older recipe are rebuilt.
# 2: eager attention traced and fused by ONNX Runtime's transformer optimizer (Attention,
# SkipLayerNormalization, BiasGelu, EmbedLayerNormalization), int8 weights per channel.
_RECIPE = "truthlens-onnx-2"
_OPSET = 17
_FINGERPRINT_KEY = "truthlens.weights_sha256"
_CHECKSUM_SUFFIX = ".sha256"
_QUANT_KEY = "truthlens.quantization"


def onnx_available() -> bool:
    """Whether onnxruntime and onnx can be imported (checked without importing them)."""
    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "onnx"))


def _require_onnx(feature: str) -> None:
    for module in ("onnxruntime", "onnx"):
        if importlib.util.find_spec(module) is None:
            raise MissingDependencyError(module, "fast", feature)


def resolve_backend(
    backend: str,
    device: torch.device,
    dtype: str | torch.dtype | None,
    *,
    model_type: str | None,
    local: bool,
) -> tuple[Literal["torch", "onnx"], Quantization]:
    """Which backend runs a model, and which graph when it is ONNX.

    ``"auto"`` runs an ONNX graph on a CPU where onnxruntime is installed and the model is
    a local folder of a verified family, and torch everywhere else (a GPU, half
    precision, a hub id, no onnxruntime). With no precision asked for, the graph is
    :func:`default_quantization`'s (int8 on a CPU with VNNI, else fp32); ``"float32"``
    and ``"int8"`` pick one.

    Args:
        backend: ``"auto"``, ``"torch"`` or ``"onnx"``.
        device: The resolved device.
        dtype: The precision asked for: ``None``/``"auto"`` (:func:`default_quantization`),
            ``"float32"`` (fp32 graph), ``"int8"`` (ONNX only), or a torch dtype.
        model_type: The model's ``config.model_type``.
        local: Whether the model is a local folder (graphs are built from its files).

    Returns:
        ``("torch", ...)`` or ``("onnx", quantization)``.

    Raises:
        ConfigError: For an unknown backend, or a forced one that cannot run here.
        MissingDependencyError: ``backend="onnx"`` (or ``int8``) without onnxruntime.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; use one of: {', '.join(BACKENDS)}")
    name = _dtype_name(dtype)
    if backend == "torch":
        if name == "int8":
            raise ConfigError("precision 'int8' runs on the onnx backend, not torch")
        return "torch", "fp32"
    wants_onnx = backend == "onnx" or name == "int8"
    quantization: Quantization = (
        "int8" if name == "int8" else default_quantization() if name == "auto" else "fp32"
    )
    if not wants_onnx:
        if _auto_onnx(device, name, model_type, local=local):
            return "onnx", quantization
        return "torch", "fp32"
    _check_forced(device, name, local=local)
    if model_type not in _VERIFIED_TYPES:
        raise ConfigError(
            f"the ONNX export is verified for {', '.join(sorted(_VERIFIED_TYPES))} models, "
            f"not {model_type!r}; use backend='torch'"
        )
    return "onnx", quantization


def _auto_onnx(
    device: torch.device, precision: str, model_type: str | None, *, local: bool
) -> bool:
    """Whether ``backend="auto"`` can run the ONNX graph here (otherwise it runs torch)."""
    return (
        device.type == "cpu"
        and precision in {"auto", "float32"}
        and local
        and model_type in _VERIFIED_TYPES
        and onnx_available()
    )


def fusion_shape(config: Any) -> tuple[int, int] | None:
    """``(attention heads, hidden size)`` of an encoder whose fused export is verified.

    ``None`` for other families: their graphs are exported as traced.
    """
    if getattr(config, "model_type", None) not in _VERIFIED_TYPES:
        return None
    return int(config.num_attention_heads), int(config.hidden_size)


def _check_forced(device: torch.device, precision: str, *, local: bool) -> None:
    """Why a forced ONNX backend cannot run here, as a typed error."""
    if device.type != "cpu":
        raise ConfigError(
            f"the onnx backend runs on the CPU, not {device}; use backend='torch' there"
        )
    if precision not in {"auto", "float32", "int8"}:
        raise ConfigError(f"the onnx backend runs fp32 or int8 graphs, not {precision}")
    if not local:
        raise ConfigError(
            "the onnx backend builds its graph from a local model folder; download the "
            "model (`hf download ID --local-dir ./model`) and pass the folder"
        )
    _require_onnx("backend='onnx'")


def _dtype_name(dtype: str | torch.dtype | None) -> str:
    if dtype is None:
        return "auto"
    if isinstance(dtype, str):
        return dtype
    return str(dtype).removeprefix("torch.")


# -- fingerprints and where graphs live ---------------------------------------------------


def weights_fingerprint(*files: Path) -> str:
    """SHA-256 over the export recipe and the bytes of ``files`` (weights and config).

    Args:
        files: The files a graph is built from, e.g. ``model.safetensors`` and
            ``config.json``.

    Returns:
        The hex digest.

    Raises:
        ModelLoadError: If a file cannot be read.
    """
    digest = hashlib.sha256(_RECIPE.encode())
    for file in files:
        digest.update(file.name.encode())
        try:
            with file.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
        except OSError as exc:
            raise ModelLoadError(f"cannot read {file} to fingerprint it: {exc}") from exc
    return digest.hexdigest()


def cache_dir() -> Path:
    """The user cache for built graphs: ``$TRUTHLENS_CACHE_DIR`` or ``~/.cache/truthlens``."""
    root = os.environ.get("TRUTHLENS_CACHE_DIR")
    if root:
        return Path(root).expanduser() / "onnx"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "truthlens" / "onnx"


def graph_path(folder: Path, quantization: Quantization, name: str = "model") -> Path:
    """Where ``truthlens export-onnx`` writes a folder's graph: ``FOLDER/onnx/NAME.Q.onnx``."""
    return folder / "onnx" / f"{name}.{quantization}.onnx"


def _cached_path(fingerprint: str, quantization: Quantization, name: str) -> Path:
    return cache_dir() / fingerprint[:32] / f"{name}.{quantization}.onnx"


def _checksum_path(graph: Path) -> Path:
    """The file holding the SHA-256 of ``graph``'s bytes: ``NAME.Q.onnx.sha256``."""
    return graph.with_name(graph.name + _CHECKSUM_SUFFIX)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _integrity_problem(graph: Path) -> str | None:
    """Why ``graph`` is not the file its export wrote, or ``None`` when it is.

    The weights' fingerprint in the metadata survives an edit of the graph's operators
    or initializers; the checksum of the whole file does not. A graph with no checksum
    (from an exporter before checksums, or copied without it) is not trusted either.
    """
    sidecar = _checksum_path(graph)
    try:
        expected = sidecar.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return f"has no readable checksum file {sidecar.name}"
    try:
        actual = _file_sha256(graph)
    except OSError as exc:
        return f"cannot be read ({exc})"
    if actual != expected:
        return "does not match its checksum (changed or cut short after export)"
    return None


# -- building -------------------------------------------------------------------------------


def _publish(partial: Path, target: Path) -> None:
    """Rename a finished graph into place, its checksum first.

    A crash in between leaves a checksum that does not match, and the graph is
    rebuilt or refused.
    """
    sidecar = _checksum_path(partial)
    sidecar.write_text(_file_sha256(partial) + "\n", encoding="ascii")
    sidecar.replace(_checksum_path(target))
    partial.replace(target)


def export_graph(
    module: Any,
    target: Path,
    *,
    inputs: Sequence[str],
    outputs: Sequence[str],
    fingerprint: str,
    quantization: Quantization,
    fuse: tuple[int, int] | None = None,
) -> Path:
    """Export a torch module to ONNX at ``target`` (fp32, or int8 dynamic quantization).

    The file is written beside ``target`` and renamed into place (no half graphs); int8
    graphs are quantized from the (fused) fp32 graph, weights per output channel.

    Args:
        module: A torch module in eval mode, in fp32, on the CPU, taking ``inputs``
            (int64 ``[batch, tokens]``) in order and returning a tuple of ``outputs``.
        target: The graph file to write.
        inputs: Input names (``input_ids``, ``attention_mask``, ...).
        outputs: Output names (``logits``, ``last_hidden_state``).
        fingerprint: The weights' fingerprint, stored in the graph's metadata.
        quantization: ``"fp32"`` or ``"int8"``.
        fuse: ``(attention heads, hidden size)`` of a BERT-family encoder to fuse
            (:func:`_fuse`), or ``None`` to keep the traced graph as it is.

    Returns:
        ``target``.

    Raises:
        ModelLoadError: If the export or quantization fails, or ``target`` is not writable.
    """
    _require_onnx("building an ONNX graph")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelLoadError(f"cannot write ONNX graphs to {target.parent}: {exc}") from exc
    fp32 = target.with_name(f".{target.stem}.{os.getpid()}.fp32.tmp.onnx")
    partial = target.with_name(f".{target.stem}.{os.getpid()}.tmp.onnx")
    try:
        _trace(module, fp32, inputs, outputs, eager=fuse is not None)
        if fuse is not None:
            _fuse(fp32, *fuse)
        if quantization == "int8":
            _quantize(fp32, partial)
            fp32.unlink()
        else:
            fp32.replace(partial)
        _write_stamp(partial, fingerprint, quantization)
        _publish(partial, target)
    except Exception as exc:
        for leftover in (fp32, partial, _checksum_path(partial)):
            leftover.unlink(missing_ok=True)
        raise ModelLoadError(f"could not build the ONNX graph {target}: {exc}") from exc
    logger.info("built ONNX graph %s (%s)", target, quantization)
    return target


def _trace(
    module: Any, path: Path, inputs: Sequence[str], outputs: Sequence[str], *, eager: bool = False
) -> None:
    """The fp32 graph of ``module``, with batch and token axes left dynamic.

    With ``eager``, every transformers layer inside ``module`` is switched to its eager
    attention first (the written-out softmax the optimizer recognises; the SDPA graph does
    not fuse). Layers copied from another model (the NLI branch's) keep a config of their
    own, so each submodule's config is switched, not only the model's. ``module`` is a
    throwaway copy loaded for the export.
    """
    import torch

    if eager:
        for sub in module.modules():
            config = getattr(sub, "config", None)
            if getattr(config, "_attn_implementation", "eager") != "eager":
                config._attn_implementation = "eager"  # type: ignore[union-attr]
    example = torch.ones((2, 16), dtype=torch.long)
    axes = {n: {0: "batch", 1: "tokens"} for n in (*inputs, *outputs)}
    # The tracer warns about every Python-level branch it freezes; the shapes that
    # matter are dynamic (checked against torch by the tests), so the noise is muted.
    with torch.no_grad(), warnings.catch_warnings(), _quiet_root_logger():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            tuple(example for _ in inputs),
            str(path),
            input_names=list(inputs),
            output_names=list(outputs),
            dynamic_axes=axes,
            opset_version=_OPSET,
            dynamo=False,
        )


def _write_stamp(path: Path, fingerprint: str, quantization: Quantization) -> None:
    """Store the weights' fingerprint and the precision in the graph's metadata."""
    import onnx

    graph = onnx.load(str(path))
    onnx.helper.set_model_props(graph, {_FINGERPRINT_KEY: fingerprint, _QUANT_KEY: quantization})
    onnx.save(graph, str(path))


def _quantize(source: Path, target: Path) -> None:
    """int8 dynamic quantization of ``source`` into ``target``, weights per output channel."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with _quiet_root_logger():
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            # fused operators carry no shape information for the quantizer
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )


def _fuse(path: Path, heads: int, hidden: int) -> None:
    """Rewrite the graph at ``path`` with ONNX Runtime's fused transformer operators.

    Each layer's attention, residual layer norms and GELU become one operator each: the
    traced graph of many small operators ran at 0.65-0.88x torch's speed on the CPU, the
    fused one as fast as torch. Only the portable fusions run here (``opt_level=0``); the
    session applies the machine-specific ones when it loads the graph.
    """
    from onnxruntime.transformers.optimizer import optimize_model

    with _quiet_root_logger():
        model = optimize_model(
            str(path), model_type="bert", num_heads=heads, hidden_size=hidden, opt_level=0
        )
    model.save_model_to_file(str(path))


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """Mute the root logger (the quantizer logs advice there with ``logging.warning``)."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


# -- running --------------------------------------------------------------------------------


class OnnxModel:
    """One ONNX Runtime session over a graph, shared by every user in the process.

    Args:
        path: The graph file.
        session: The ONNX Runtime ``InferenceSession``.
        quantization: Which graph it is.
    """

    def __init__(self, path: Path, session: Any, quantization: Quantization) -> None:
        self.path = path
        self.session = session
        self.quantization = quantization
        self.input_names = tuple(i.name for i in session.get_inputs())
        self.output_names = tuple(o.name for o in session.get_outputs())

    @property
    def rows_per_run(self) -> int | None:
        """At most this many rows per run; ``None``: no limit.

        Dynamic int8 quantization scales each activation tensor by its own range, over
        every row and padded position in the run: a row's result would depend on the
        rows batched with it. The int8 graph therefore runs one row at a time (without
        padding), which on the CPU is also faster than a padded batch.
        """
        return 1 if self.quantization == "int8" else None

    def run(self, feeds: Mapping[str, np.ndarray], outputs: Sequence[str]) -> list[np.ndarray]:
        """Run the graph; ``feeds`` may hold more inputs than the graph reads."""
        return list(
            self.session.run(
                list(outputs), {k: v for k, v in feeds.items() if k in self.input_names}
            )
        )


_sessions: dict[str, OnnxModel] = {}
_sessions_lock = threading.Lock()


def clear_sessions() -> None:
    """Forget every ONNX session (``clear_model_cache`` calls this)."""
    with _sessions_lock:
        _sessions.clear()


def _threads() -> int:
    """Intra-op threads: ``$TRUTHLENS_ONNX_THREADS``, else the cores this process may use.

    The cores come from the process's CPU set (a container's share, not the host's
    count), capped by ``$OMP_NUM_THREADS`` where a launcher sets it: Ray sets it to a
    replica's ``num_cpus``, and torch reads it the same way, so a replica's graph uses
    the cores the replica reserved instead of every core of the node.

    ``$TRUTHLENS_ONNX_THREADS`` above the cores is cut to the cores, with a warning:
    512 threads on 2 cores ran 3x slower than 2 (threads wait for each other's cores).

    Raises:
        ConfigError: If ``$TRUTHLENS_ONNX_THREADS`` is not a positive integer.
    """
    cores = _cores()
    asked = _positive_env("TRUTHLENS_ONNX_THREADS", strict=True)
    if asked is not None:
        if asked > cores:
            _warn_threads(asked, cores)
            return cores
        return asked
    # OMP_NUM_THREADS belongs to other libraries too: a value they would not accept is
    # theirs to report, so it is ignored here rather than refused.
    reserved = _positive_env("OMP_NUM_THREADS", strict=False)
    return min(cores, reserved) if reserved is not None else cores


def _cores() -> int:
    """The cores this process may run on (its CPU set where the OS has one)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


_warned_threads: set[tuple[int, int]] = set()


def _warn_threads(asked: int, cores: int) -> None:
    """Say once per process (per value) that the thread count was cut to the cores."""
    if (asked, cores) in _warned_threads:
        return
    _warned_threads.add((asked, cores))
    logger.warning(
        "TRUTHLENS_ONNX_THREADS=%d is more than the %d cores this process may use; "
        "running %d threads (more threads than cores only wait for each other)",
        asked,
        cores,
        cores,
    )


def _positive_env(name: str, *, strict: bool) -> int | None:
    """A positive integer from the environment, ``None`` when unset (or bad, if not strict)."""
    asked = os.environ.get(name, "").strip()
    if not asked:
        return None
    try:
        value = int(asked)
    except ValueError:
        value = 0
    if value >= 1:
        return value
    if strict:
        raise ConfigError(f"{name} must be a positive integer, got {asked!r}")
    return None


def _session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = _threads()
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Idle intra-op threads sleep instead of spinning: a spinning thread takes the core
    # the Python side (tokenising, evidence selection) needs between runs, and on a
    # shared machine it waits for descheduled peers. With both cores of the 2-core CPU
    # under other load, a 1k-token detector call took 329 ms p50 without spinning, 434 ms
    # with it.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ModelLoadError(f"could not open the ONNX graph {path}: {exc}") from exc


def _stamp(session: Any) -> tuple[str | None, str | None]:
    meta = session.get_modelmeta().custom_metadata_map
    return meta.get(_FINGERPRINT_KEY), meta.get(_QUANT_KEY)


def load_graph(
    folder: Path,
    fingerprint: str,
    quantization: Quantization,
    build: Callable[[Path], Path],
    *,
    name: str = "model",
) -> OnnxModel:
    """The shared session of ``folder``'s graph, built into the user cache if missing.

    A graph beside the weights (``FOLDER/onnx/``) is used when its fingerprint matches
    and refused when it does not; otherwise the user cache's graph for this fingerprint
    is used, and built with ``build(path)`` when it is missing or does not match.

    Args:
        folder: The model folder.
        fingerprint: The weights' fingerprint (:func:`weights_fingerprint`).
        quantization: Which graph.
        build: Writes the graph to the path it is given (see :func:`export_graph`).
        name: The graph's name inside the folder (``model``, ``nli``).

    Returns:
        The shared model.

    Raises:
        ModelLoadError: If the graph beside the weights was built from other weights,
            or a graph cannot be built or opened.
    """
    beside = graph_path(folder, quantization, name)
    key = f"{beside}:{fingerprint}"
    with _sessions_lock:
        cached = _sessions.get(key)
        if cached is not None:
            return cached
        if beside.is_file():
            session = _session_beside(beside, folder, fingerprint, quantization)
            path = beside
        else:
            path = _cached_path(fingerprint, quantization, name)
            session = _cached_session(path, fingerprint, quantization)
            if session is None:
                build(path)
                session = _session(path)
                if _stamp(session) != (fingerprint, quantization):
                    raise ModelLoadError(f"the ONNX graph built at {path} carries no fingerprint")
        model = OnnxModel(path, session, quantization)
        _sessions[key] = model
        logger.info("ONNX Runtime session for %s (%d threads)", path, _threads())
        return model


def _session_beside(
    beside: Path, folder: Path, fingerprint: str, quantization: Quantization
) -> Any:
    """The session of the graph beside the weights, refused when it is not theirs.

    Raises:
        ModelLoadError: If its bytes do not match its checksum, or it was built from
            other weights.
    """
    problem = _integrity_problem(beside)
    if problem is not None:
        raise ModelLoadError(
            f"the ONNX graph {beside} {problem}; rebuild it with "
            f"`truthlens export-onnx {folder}` or delete it"
        )
    session = _session(beside)
    if _stamp(session) != (fingerprint, quantization):
        raise ModelLoadError(
            f"the ONNX graph {beside} was built from other weights than those in "
            f"{folder} (or by another exporter version); rebuild it with "
            f"`truthlens export-onnx {folder}` or delete it"
        )
    return session


def _cached_session(path: Path, fingerprint: str, quantization: Quantization) -> Any:
    """The session of the user cache's graph at ``path``, or ``None`` to rebuild it.

    A graph there that is cut short, edited, unreadable or built from other weights is
    rebuilt (with a warning), not left for torch to stand in for in every later process.
    """
    if not path.is_file():
        return None
    problem = _integrity_problem(path)
    session = None
    if problem is None:
        try:
            session = _session(path)
        except ModelLoadError as exc:
            problem = f"cannot be opened ({exc})"
    if session is not None and _stamp(session) != (fingerprint, quantization):
        session, problem = None, "does not match its key"
    if problem is not None:
        logger.warning("ONNX graph %s %s; rebuilding it", path, problem)
    return session
