"""The encoder shipped inside the package, shared by the bundled detector, NLI and classifier.

All three bundled models use one MiniLM-L6 encoder stored in ``_bundled/detector``. That
folder is a standard ``BertForTokenClassification`` checkpoint in the LettuceDetect format
(the detector), plus ``heads.safetensors`` with two small sequence heads (NLI and "needs
fact check") applied to the same encoder's mean-pooled states. The encoder comes from the
shared model cache (:func:`load_token_classifier`), so the detector, the NLI explainer and
the classifier hold one copy of it per (path, device, dtype).

The NLI explainer adds a branch of its own (``_bundled/nli/model.safetensors``): it reuses
the encoder's embeddings and lower layers as they are and replaces the upper layers and
the head with ones trained for NLI alone. The branch records a fingerprint of the layers it
was trained on and is only used with an encoder that matches it.

On the ONNX backend (see :mod:`._onnx`) the encoder runs as the detector's graph (which
also returns the encoder states the heads read), the branch as a graph of its own, and
the heads in numpy; the branch's graph is built from the encoder and the branch file and
fingerprinted over both.

torch and transformers are imported lazily, inside the functions that need them.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ModelLoadError, ModelNotAvailableError
from ._loading import LoadedModel, load_token_classifier, no_load_bar
from ._onnx import OnnxModel, export_graph, fusion_shape, load_graph, weights_fingerprint
from ._sequence import sequence_probabilities

if TYPE_CHECKING:
    import torch

__all__ = [
    "BRANCH_FILE",
    "BUNDLED_DIR",
    "Branch",
    "Shared",
    "bundled_detector_path",
    "encoder_fingerprint",
    "head_probabilities",
    "load_branch",
    "load_shared",
]

logger = logging.getLogger(__name__)

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "_bundled"
_DETECTOR_FILES = ("config.json", "model.safetensors", "tokenizer.json")
_HEADS_FILE = "heads.safetensors"
BRANCH_FILE = "model.safetensors"


def bundled_detector_path() -> Path:
    """Folder of the bundled detector (a LettuceDetect-format token classifier).

    Returns:
        The folder, loadable with ``AutoModelForTokenClassification.from_pretrained``.

    Raises:
        ModelNotAvailableError: If the weights are not in this installation.
    """
    path = BUNDLED_DIR / "detector"
    missing = [name for name in _DETECTOR_FILES if not (path / name).is_file()]
    if missing:
        raise ModelNotAvailableError(
            f"the bundled detector is missing from this installation ({path}: no "
            f"{', '.join(missing)}). Reinstall truthlens-integrations from a wheel that "
            "includes its package data, or name another model."
        )
    return path


def encoder_fingerprint(folder: Path, shared_layers: int) -> str:
    """SHA-256 over the embeddings and the lower ``shared_layers`` layers of an encoder.

    The token head and the upper layers are left out, so recalibrating the detector's
    head does not break a branch built on the same lower layers.

    Args:
        folder: A bundled detector folder (``model.safetensors`` in it).
        shared_layers: How many lower transformer layers to include.

    Returns:
        The hex digest.
    """
    from safetensors import safe_open

    prefixes = ("bert.embeddings.", *(f"bert.encoder.layer.{i}." for i in range(shared_layers)))
    digest = hashlib.sha256()
    with safe_open(str(folder / "model.safetensors"), framework="pt") as fh:
        for key in sorted(k for k in fh.keys() if k.startswith(prefixes)):  # noqa: SIM118
            digest.update(key.encode())
            digest.update(fh.get_tensor(key).contiguous().numpy().tobytes())
    return digest.hexdigest()


@dataclass
class Branch:
    """An encoder that shares the lower layers of another one, with its own head."""

    model: Any
    head: dict[str, Any]


@dataclass
class Shared:
    """The detector's loaded encoder (with its tokenizer) and the sequence heads on it."""

    loaded: LoadedModel
    # torch tensors on the encoder's device, or float32 numpy arrays on the ONNX backend
    heads: dict[str, Any]
    folder: Path
    # None: the folder's branch was built for another encoder
    branches: dict[str, Branch | None] = field(default_factory=dict)

    @property
    def device(self) -> torch.device:
        """Where the encoder runs."""
        return self.loaded.device

    @property
    def dtype(self) -> torch.dtype:
        """The encoder's precision."""
        return self.loaded.dtype


_cache: dict[tuple[str, str, str, str], Shared] = {}
_cache_lock = threading.Lock()


def load_shared(
    path: Path | None,
    device: str | torch.device | None,
    dtype: str | torch.dtype | None,
    backend: str = "auto",
) -> Shared:
    """The bundled encoder and its heads, loaded once per (folder, device, precision, backend).

    Args:
        path: A bundled model folder; ``None`` uses the shipped one.
        device: Where to run; ``None`` picks automatically.
        dtype: Precision (see :func:`resolve_dtype`; ``"int8"`` on the ONNX backend).
        backend: ``"auto"``, ``"torch"`` or ``"onnx"`` (see :func:`load_pretrained`).

    Returns:
        The shared encoder with its heads.
    """
    folder = path or bundled_detector_path()
    heads_path = folder / _HEADS_FILE
    if not heads_path.is_file():
        raise ModelNotAvailableError(f"no {_HEADS_FILE} in {folder}: not a bundled model folder")
    # The encoder cache resolves the backend; its answer keys this cache.
    encoder = load_token_classifier(folder, device=device, dtype=dtype, backend=backend)
    variant = encoder.graph.quantization if encoder.graph is not None else "torch"
    key = (str(folder), str(encoder.device), str(encoder.dtype), variant)
    with _cache_lock:
        if key not in _cache:
            _cache[key] = Shared(encoder, _read_heads(heads_path, encoder), folder)
        return _cache[key]


def _read_heads(heads_path: Path, encoder: LoadedModel) -> dict[str, Any]:
    from safetensors.torch import load_file

    try:
        tensors = load_file(heads_path)
    except (OSError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(f"could not load the heads in {heads_path}: {exc}") from exc
    if encoder.backend == "onnx":
        return {k: v.float().numpy() for k, v in tensors.items()}
    return {k: v.to(device=encoder.device, dtype=encoder.dtype) for k, v in tensors.items()}


def load_branch(shared: Shared, folder: Path) -> Branch | None:
    """The NLI branch in ``folder`` for this encoder; ``None`` if it was built for another."""
    with _cache_lock:
        if str(folder) not in shared.branches:
            shared.branches[str(folder)] = _read_branch(shared, folder)
        return shared.branches[str(folder)]


def _read_branch(shared: Shared, folder: Path) -> Branch | None:
    from safetensors import safe_open
    from safetensors.torch import load_file

    file = folder / BRANCH_FILE
    try:
        with safe_open(str(file), framework="pt") as fh:
            meta = fh.metadata() or {}
        k = int(meta["shared_layers"])
        if meta.get("encoder_sha256") != encoder_fingerprint(shared.folder, k):
            logger.info("NLI branch %s was trained on another encoder than %s", file, shared.folder)
            return None
        if shared.loaded.graph is not None:
            return _onnx_branch(shared, folder, k)
        tensors = load_file(str(file))
    except (OSError, KeyError, ValueError, RuntimeError) as exc:
        raise ModelLoadError(f"could not read the NLI branch {file}: {exc}") from exc
    return _torch_branch(shared.loaded.model.bert, tensors, k, shared.device, shared.dtype, folder)


def _onnx_branch(shared: Shared, folder: Path, k: int) -> Branch:
    """The branch as an ONNX graph, built from the encoder's and the branch's weights."""
    from safetensors.torch import load_file

    graph = shared.loaded.graph
    assert graph is not None  # callers check
    file = folder / BRANCH_FILE
    fingerprint = weights_fingerprint(
        file, shared.folder / "model.safetensors", shared.folder / "config.json"
    )
    tensors = load_file(str(file))

    def build(path: Path) -> Path:
        import torch
        from transformers import BertForTokenClassification

        with no_load_bar():
            encoder = BertForTokenClassification.from_pretrained(
                str(shared.folder), dtype=torch.float32
            ).bert
        model = _torch_branch(encoder, tensors, k, torch.device("cpu"), torch.float32, folder)
        return export_graph(
            _states_module(model.model),
            path,
            inputs=("input_ids", "attention_mask", "token_type_ids"),
            outputs=("last_hidden_state",),
            fingerprint=fingerprint,
            quantization=graph.quantization,
            fuse=fusion_shape(encoder.config),
        )

    branch_graph = load_graph(folder, fingerprint, graph.quantization, build, name="nli")
    head = {
        "nli." + n.removeprefix("head."): v.float().numpy()
        for n, v in tensors.items()
        if n.startswith("head.")
    }
    logger.info("loaded NLI branch from %s on ONNX Runtime (%d shared layers)", folder, k)
    return Branch(branch_graph, head)


def _states_module(encoder: Any) -> Any:
    """A module returning an encoder's last hidden states, for the ONNX export."""
    import torch

    class _States(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = encoder

        def forward(
            self,
            input_ids: torch.Tensor,
            attention_mask: torch.Tensor,
            token_type_ids: torch.Tensor,
        ) -> torch.Tensor:
            out = self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            states: torch.Tensor = out.last_hidden_state
            return states

    return _States().eval()


def _torch_branch(
    bert: Any,
    tensors: dict[str, torch.Tensor],
    k: int,
    device: torch.device,
    dtype: torch.dtype,
    folder: Path,
) -> Branch:
    import torch
    from transformers import BertModel

    with torch.device("meta"):
        model: Any = BertModel(bert.config, add_pooling_layer=False)
    model.embeddings = bert.embeddings
    upper = copy.deepcopy(bert.encoder.layer[k:])
    prefix = "encoder.layer."
    for offset, layer in enumerate(upper):
        key = f"{prefix}{k + offset}."
        layer.load_state_dict({n[len(key) :]: v for n, v in tensors.items() if n.startswith(key)})
    model.encoder.layer = torch.nn.ModuleList([*bert.encoder.layer[:k], *upper])
    model.to(device, dtype).eval()
    # stored as "head.*"; named like the multi-task NLI head so callers need not care
    head = {
        "nli." + n.removeprefix("head."): v.to(device, dtype)
        for n, v in tensors.items()
        if n.startswith("head.")
    }
    logger.info("loaded NLI branch from %s (%d shared layers)", folder, k)
    return Branch(model, head)


def _head_logits(heads: dict[str, Any], name: str, states: torch.Tensor, mask: torch.Tensor) -> Any:
    import torch

    m = mask.unsqueeze(-1).to(states.dtype)
    pooled = (states * m).sum(1) / m.sum(1).clamp(min=1.0)
    h = heads
    hidden = torch.tanh(pooled @ h[f"{name}.dense.weight"].T + h[f"{name}.dense.bias"])
    return hidden @ h[f"{name}.out.weight"].T + h[f"{name}.out.bias"]


def _numpy_head_logits(heads: dict[str, Any], name: str, states: Any, mask: Any) -> Any:
    """:func:`_head_logits` in numpy (float32), for the ONNX backend."""
    import numpy as np

    m = mask[..., None].astype(np.float32)
    pooled = (states * m).sum(1) / np.maximum(m.sum(1), 1.0)
    hidden = np.tanh(pooled @ heads[f"{name}.dense.weight"].T + heads[f"{name}.dense.bias"])
    return hidden @ heads[f"{name}.out.weight"].T + heads[f"{name}.out.bias"]


def head_probabilities(
    shared: Shared,
    head: str,
    texts: Sequence[tuple[str, str | None]],
    *,
    batch_size: int,
    max_length: int,
    branch: Branch | None = None,
) -> list[list[float]]:
    """Class probabilities per input, batched by length, in input order.

    ``head`` names a head of ``heads.safetensors``; with a ``branch``, the branch's
    encoder and its head of that name are used instead.
    """
    heads = branch.head if branch else shared.heads

    def logits(encoded: Any) -> Any:
        mask = encoded["attention_mask"]
        encoder = branch.model if branch else shared.loaded.model.bert
        states = encoder(input_ids=encoded["input_ids"], attention_mask=mask).last_hidden_state
        return _head_logits(heads, head, states, mask)

    def onnx_logits(feeds: dict[str, Any]) -> Any:
        import numpy as np

        graph: OnnxModel | None = branch.model if branch else shared.loaded.graph
        assert graph is not None  # onnx_logits runs on the ONNX backend only
        # The heads were trained on the encoder read without segment ids (as the torch
        # path above calls it), so the pair's second segment is not marked here either.
        feeds = {**feeds, "token_type_ids": np.zeros_like(feeds["input_ids"])}
        states = graph.run(feeds, ["last_hidden_state"])[0]
        return _numpy_head_logits(heads, head, states, feeds["attention_mask"])

    onnx = shared.loaded.graph is not None
    return sequence_probabilities(
        shared.loaded,
        texts,
        batch_size=batch_size,
        max_length=max_length,
        logits=onnx_logits if onnx else logits,
    )
