"""A claim checker over a Hugging Face sequence classifier, from a local folder or the hub.

It reads each claim against its evidence as a text pair, ``(evidence, claim)``, the way
fact-checking classifiers are trained: MiniCheck and FactCG (two classes, class 1 =
supported), NLI cross-encoders (entailment / neutral / contradiction, or entailment /
not_entailment), a T5 sequence classifier, or a one-logit head whose sigmoid is the
probability of support. The evidence is cut when the pair is too long; the claim never
is: a claim that does not fit beside one evidence token is not checked.

What each class means comes from the model's ``id2label``, or from ``supported_label``
where the names say nothing (``LABEL_0`` / ``LABEL_1``); a checkpoint whose classes
cannot be read is refused when it loads, never guessed.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..._errors import InvalidArgumentError, ModelLoadError
from .._sequence import HFSequenceClassifier, sequence_probabilities
from ._contract import (
    SUPPORT_THRESHOLD,
    Claim,
    ClaimJudgement,
    ClaimLabel,
    judged,
    not_checked,
)

if TYPE_CHECKING:
    import torch

__all__ = ["SequenceClassifierChecker", "claim_labels"]

logger = logging.getLogger(__name__)

#: Tokens per (evidence, claim) pair unless the model's window is smaller.
DEFAULT_MAX_LENGTH = 512
# A model's error message can be long (a tensor dump); a reason keeps its start.
_REASON_CHARS = 300

# Class names, as letters only in lower case ("NOT_ENTAILMENT" -> "notentailment").
_SUPPORTED = frozenset(
    {
        "entailment",
        "entail",
        "entails",
        "entailed",
        "supported",
        "support",
        "supports",
        "consistent",
        "faithful",
        "factual",
        "grounded",
        "attributable",
        "correct",
        "yes",
    }
)
_CONTRADICTION = frozenset(
    {"contradiction", "contradict", "contradicts", "contradicted", "contradictory", "refuted"}
)
_NEUTRAL = frozenset({"neutral", "no", "notenoughinfo", "nei", "extrapolatory", "unverifiable"})
# Names that say a claim is made up: not supported, and their negation is supported.
_HALLUCINATED = frozenset({"hallucinated", "hallucination", "hallucinating"})
_NEGATIONS = ("not", "non", "no", "un", "in")


def _letters(name: object) -> str:
    return "".join(ch for ch in str(name).lower() if ch.isalpha())


def _meaning(name: object) -> ClaimLabel | None:
    """What a class name says about a claim, or ``None`` (``LABEL_0``, ``other``)."""
    text = _letters(name)
    if text in _SUPPORTED:
        return "supported"
    if text in _CONTRADICTION:
        return "contradiction"
    if text in _NEUTRAL or text in _HALLUCINATED:
        return "neutral"
    for prefix in _NEGATIONS:
        rest = text.removeprefix(prefix)
        if rest == text or not rest:
            continue
        if rest in _SUPPORTED:  # not_entailment, unsupported, inconsistent, nonfactual
            return "neutral"
        if rest in _HALLUCINATED:  # no_hallucination, not_hallucinated
            return "supported"
    return None


def _unreadable_labels(source: str, id2label: Mapping[int, str], why: str) -> ModelLoadError:
    example = "supported_label=1" if len(id2label) == 2 else "supported_label=<index or name>"
    return ModelLoadError(
        f"{source}: cannot tell which class means 'supported' from its labels "
        f"{dict(id2label)} ({why}). Name the supported class: {example} (the policy's "
        "claim_check.supported_label); MiniCheck and FactCG checkpoints use class 1"
    )


def _supported_index(source: str, id2label: Mapping[int, str], supported_label: int | str) -> int:
    """The class ``supported_label`` names, by index or by name.

    Raises:
        InvalidArgumentError: If it names no class of the model.
    """
    if isinstance(supported_label, int):
        if supported_label in id2label:
            return supported_label
        raise InvalidArgumentError(
            f"supported_label={supported_label} is not a class of {source}; its classes "
            f"are {dict(id2label)}"
        )
    matches = [i for i, name in id2label.items() if str(name) == supported_label]
    if not matches:
        wanted = _letters(supported_label)
        matches = [i for i, name in id2label.items() if _letters(name) == wanted]
    if len(matches) != 1:
        raise InvalidArgumentError(
            f"supported_label={supported_label!r} names {len(matches)} classes of {source}; "
            f"its classes are {dict(id2label)}: pass one name or its index"
        )
    return matches[0]


def claim_labels(
    id2label: Mapping[int, str], supported_label: int | str | None = None, *, source: str = ""
) -> dict[int, ClaimLabel]:
    """What each class of a claim-checking classifier means.

    Class names are read as supported (entailment, supported, consistent, yes,
    factual ...), contradiction, or neutral (neutral, not_entailment, unsupported, no,
    hallucinated ...). ``supported_label`` names the supported class where the names do
    not (``LABEL_0`` / ``LABEL_1``); the other classes are then neutral unless their
    names say contradiction. A one-logit head's class is supported unless its name says
    otherwise.

    Args:
        id2label: The model config's class names.
        supported_label: The supported class, by index or name.
        source: The model, for the messages.

    Returns:
        Class index to what it means; at least one class is supported and, with two or
        more classes, at least one is not.

    Raises:
        ModelLoadError: If the names cannot be read (the message names
            ``supported_label``), or contradict ``supported_label``.
        InvalidArgumentError: If ``supported_label`` names no class.
    """
    labels = {int(i): str(name) for i, name in id2label.items()}
    if supported_label is not None:
        chosen = _supported_index(source, labels, supported_label)
        mapping: dict[int, ClaimLabel] = {}
        for index, name in labels.items():
            meaning = _meaning(name)
            if index != chosen and meaning == "supported":
                raise ModelLoadError(
                    f"{source}: supported_label={supported_label!r} is class {chosen}, but "
                    f"class {index} is named {name!r}, which reads as supported; check "
                    "which class the checkpoint's card calls supported"
                )
            mapping[index] = "supported" if index == chosen else (meaning or "neutral")
        return mapping
    meanings = {index: _meaning(name) for index, name in labels.items()}
    if len(labels) == 1:
        return {index: meaning or "supported" for index, meaning in meanings.items()}
    unread = [labels[i] for i, meaning in meanings.items() if meaning is None]
    if unread:
        raise _unreadable_labels(source, labels, f"{', '.join(map(repr, unread))} say nothing")
    read = {i: m for i, m in meanings.items() if m is not None}
    if "supported" not in read.values():
        raise _unreadable_labels(source, labels, "no class reads as supported")
    if set(read.values()) == {"supported"}:
        raise _unreadable_labels(source, labels, "every class reads as supported")
    return read


class SequenceClassifierChecker(HFSequenceClassifier):
    """Judges claims with a Hugging Face sequence classifier over (evidence, claim).

    The probability of support is the summed probability of the supported classes (a
    one-logit head: its sigmoid). A claim at or above 0.5 is ``supported``; below, it
    takes the most probable of the model's other labels (``contradiction`` or
    ``neutral``). A claim with no evidence, one the tokenizer cannot read, one that does
    not fit the window beside its evidence, or one in a batch the model fails on (each
    of that batch's claims is then tried alone) is not checked, with the reason.

    Args:
        model: A local model folder or a hub id (needs the hub or its local cache).
        supported_label: The supported class, by index or name, where the model's
            ``id2label`` does not say (MiniCheck's ``LABEL_1``: ``supported_label=1``).
        max_length: Tokens per pair; the evidence is cut first. ``None``: 512, or the
            model's window where it is smaller.
        batch_size: Pairs per forward pass (sorted by length first).
        trust_remote_code: Let a checkpoint that ships its own model code run it.
            Off by default: such a checkpoint is refused.
        device: Where to run; ``None`` picks CUDA, then MPS, then the CPU.
        dtype: Precision; ``None`` picks bf16/fp16 on GPUs and fp32 on the CPU.
        revision: Hub revision (branch, tag or commit) for hub ids.
        local_files_only: Only use the local Hugging Face cache for hub ids.
        backend: ``"auto"``, ``"torch"`` or ``"onnx"`` (see ``load_pretrained``).

    Raises:
        ModelNotAvailableError: If the model cannot be found or downloaded (the
            message says how to pass a local folder instead).
        ModelLoadError: If it is not a sequence classifier, its classes cannot be read
            (the message names ``supported_label``), or it needs its own code and
            ``trust_remote_code`` is not set.
        InvalidArgumentError: For an option of the wrong type or out of range.

    Example:
        >>> from truthlens_integrations.core.models.claims import Claim
        >>> checker = SequenceClassifierChecker(  # doctest: +SKIP
        ...     "./MiniCheck-RoBERTa-Large", supported_label=1
        ... )
        >>> claim = Claim(
        ...     text="It was built in 1889.", start=0, end=21,
        ...     evidence="The tower was completed in 1889.",
        ... )
        >>> checker.check([claim])[0].label  # doctest: +SKIP
        'supported'
    """

    default_batch_size = 16
    name: str
    labels: dict[int, ClaimLabel]

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        supported_label: int | str | None = None,
        max_length: int | None = None,
        batch_size: int | None = None,
        trust_remote_code: bool = False,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        revision: str | None = None,
        local_files_only: bool | None = None,
        backend: str = "auto",
    ) -> None:
        _check_options(supported_label, max_length, batch_size)
        self._supported_label = supported_label
        super().__init__(
            model,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            max_length=max_length or DEFAULT_MAX_LENGTH,
            local_files_only=local_files_only,
            backend=backend,
            revision=revision,
            trust_remote_code=trust_remote_code,
        )
        source = self._loaded.model_id
        self.name = "sequence:" + (Path(source).name if Path(source).is_dir() else source)
        window = self._loaded.max_length
        if max_length is None:
            self.max_length = min(DEFAULT_MAX_LENGTH, window)
        elif max_length > window:
            raise InvalidArgumentError(
                f"max_length={max_length} is over the {window} tokens {source} can read; "
                f"pass at most {window}, or leave it unset"
            )
        self._specials = int(self._loaded.tokenizer.num_special_tokens_to_add(pair=True))

    def _read_labels(self, id2label: dict[int, str]) -> None:
        source = os.fspath(self._loaded.model_id)
        self.labels = claim_labels(id2label, self._supported_label, source=source)
        self._outputs = int(self._loaded.config.num_labels)
        if self._outputs != len(self.labels):
            raise ModelLoadError(
                f"{source}: num_labels is {self._outputs} but id2label names "
                f"{len(self.labels)} classes"
            )

    def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        """One judgement per claim, in order; a claim it cannot judge is not checked."""
        found: dict[int, ClaimJudgement] = {}
        sizes: dict[int, int] = {}
        for i, claim in enumerate(claims):
            size, reason = self._measure(claim)
            if reason is not None:
                found[i] = not_checked(claim, self.name, reason)
            else:
                sizes[i] = size
        order = sorted(sizes, key=sizes.__getitem__)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            found.update(self._run(claims, batch))
        return [found[i] for i in range(len(claims))]

    def _measure(self, claim: Claim) -> tuple[int, str | None]:
        """The pair's token count (for batching), or why the claim cannot be read."""
        if not claim.evidence.strip():
            return 0, "the claim has no evidence to be read against"
        if not claim.text.strip():
            return 0, "the claim is blank"
        tokenizer = self._loaded.tokenizer
        try:
            with self._loaded.tokenizer_lock:
                claim_tokens = len(tokenizer(claim.text, add_special_tokens=False)["input_ids"])
                evidence_tokens = len(
                    tokenizer(
                        claim.evidence,
                        add_special_tokens=False,
                        truncation=True,
                        max_length=self.max_length,
                    )["input_ids"]
                )
        except Exception as exc:  # noqa: BLE001 - any tokenizer failure leaves it unread
            return 0, f"the tokenizer cannot read this claim or its evidence: {_short(exc)}"
        if claim_tokens == 0:
            return 0, "the claim holds no token the model reads"
        if evidence_tokens == 0:
            return 0, "the evidence holds no token the model reads"
        if claim_tokens + self._specials >= self.max_length:
            return 0, (
                f"the claim is {claim_tokens} tokens: with the model's special tokens it "
                f"leaves no room for evidence in the {self.max_length}-token window "
                "(a claim is never cut)"
            )
        return claim_tokens + evidence_tokens, None

    def _run(self, claims: Sequence[Claim], batch: list[int]) -> dict[int, ClaimJudgement]:
        """Judge one batch; a batch the model fails on is tried again claim by claim."""
        try:
            rows = self._rows([claims[i] for i in batch])
        except Exception as exc:  # noqa: BLE001 - a model failure is not a judgement
            if len(batch) > 1:
                logger.warning("%s failed on a batch (%s); trying its claims alone", self.name, exc)
                return {i: j for one in batch for i, j in self._run(claims, [one]).items()}
            logger.warning("%s could not judge a claim: %s", self.name, exc)
            reason = f"the model failed on this claim: {_short(exc)}"
            return {batch[0]: not_checked(claims[batch[0]], self.name, reason)}
        return {i: self._judge(claims[i], row) for i, row in zip(batch, rows, strict=True)}

    def _rows(self, claims: Sequence[Claim]) -> list[list[float]]:
        return sequence_probabilities(
            self._loaded,
            [(claim.evidence, claim.text) for claim in claims],
            batch_size=len(claims),
            max_length=self.max_length,
            truncation="only_first",
        )

    def _judge(self, claim: Claim, row: object) -> ClaimJudgement:
        """The judgement a probability row gives, or not checked for a malformed row."""
        if (
            not isinstance(row, list)
            or len(row) != self._outputs
            or not all(isinstance(p, float) and math.isfinite(p) for p in row)
        ):
            shown = str(row)[:80]
            return not_checked(
                claim,
                self.name,
                f"the model gave {shown} where {self._outputs} finite scores were expected",
            )
        if self._outputs == 1:
            # One logit: the probability of its class, whatever that class means.
            meaning = self.labels[0]
            supported = row[0] if meaning == "supported" else 1.0 - row[0]
            against: ClaimLabel = "neutral" if meaning == "supported" else meaning
            label = "supported" if supported >= SUPPORT_THRESHOLD else against
            return judged(claim, self.name, supported, label=label)
        totals: dict[ClaimLabel, float] = {}
        for index, p in enumerate(row):
            totals[self.labels[index]] = totals.get(self.labels[index], 0.0) + p
        supported = totals.pop("supported", 0.0)
        if supported >= SUPPORT_THRESHOLD:
            return judged(claim, self.name, supported, label="supported")
        # neutral first: a tie does not read as the stronger contradiction
        other = max(sorted(totals, key=lambda k: k != "neutral"), key=totals.__getitem__)
        return judged(claim, self.name, supported, label=other)


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first[:_REASON_CHARS]


def _check_options(supported_label: object, max_length: object, batch_size: object) -> None:
    """Refuse an option of the wrong type or out of range before the model loads."""
    if supported_label is not None and (
        isinstance(supported_label, bool) or not isinstance(supported_label, int | str)
    ):
        raise InvalidArgumentError(
            f"supported_label must be a class index or name, got {supported_label!r}"
        )
    for option, value in (("max_length", max_length), ("batch_size", batch_size)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(
                f"{option} must be a whole number of 1 or more, got {value!r}"
            )
