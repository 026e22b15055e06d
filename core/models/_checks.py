"""What a model folder must hold to be loaded: every check of a checkpoint before it runs.

A folder that is not what it says fails here, at load time, with a message that names the
folder and the fix: numbers in its config that make no sense, labels that cannot be read as
supported or hallucinated, an architecture of the wrong kind, a tokenizer that does not
fit the model's vocabulary.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Literal

from .._calibration._file import check_response_map
from .._errors import ConfigError, ModelLoadError

__all__ = [
    "Task",
    "check_config",
    "check_config_numbers",
    "check_model",
    "check_sequence_model",
    "check_tokenizer",
    "token_window",
]

#: What a checkpoint classifies: each token (the detector) or the whole input.
Task = Literal["token", "sequence"]

# Tokenizers report a huge sentinel when they have no limit of their own.
_NO_LIMIT = 1_000_000
# A tokenizer much smaller than the model's embedding table belongs to another model
# (or is the near-empty stand-in transformers builds when the files are missing).
# Embedding tables are often padded (ModernBERT: 50,368 rows for 50,280 tokens), so
# only a large gap counts.
_MIN_VOCAB_SHARE = 0.5

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


def check_model(source: str, model: Any, info: dict[str, Any]) -> None:
    """Refuse checkpoints that are not a two-class token classifier with all its weights.

    ``from_pretrained`` fills weights the checkpoint lacks with random values and only
    logs a warning, so a ``config.json`` of another architecture (whose parameter
    names match nothing in the weights) loaded and answered at random.
    """
    config = model.config
    check_config(source, config)
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


def check_config(source: str, config: Any) -> None:
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


def check_sequence_model(source: str, config: Any) -> None:
    """Refuse a checkpoint saved as something other than a sequence classifier."""
    _check_architecture(source, config, "ForSequenceClassification", "a sequence classifier")


def _check_architecture(source: str, config: Any, suffix: str, expected: str) -> None:
    """Refuse a config whose named architectures all lack ``suffix`` (none named: accepted)."""
    architectures = getattr(config, "architectures", None) or []
    if architectures and not any(a.endswith(suffix) for a in architectures):
        raise ModelLoadError(
            f"{source} was saved as {', '.join(architectures)}, not {expected} (...{suffix})"
        )


def check_tokenizer(
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


def token_window(config: Any, tokenizer: Any) -> int:
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
