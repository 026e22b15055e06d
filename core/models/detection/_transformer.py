"""Token-classification detector in the LettuceDetect format, with windowing and batching."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._calibration._map import calibrated_score, read_response_calibration
from ..._calibration._signals import logit as _logit
from ..._errors import ContextTooLongError, ModelLoadError
from ..._text import AnswerText, words
from ..._types import (
    Coverage,
    DetectionConfig,
    DetectionInput,
    HallucinationSpan,
    TokenScore,
)
from .._loading import LoadedModel, load_token_classifier
from ._base import BaseDetector, TokenScoring
from ._claims import ClaimCheck, claim_logits
from ._lexical import absent_words
from ._prompt import format_prompt
from ._rules import conflict_marks

if TYPE_CHECKING:
    import torch

__all__ = ["TransformerDetector"]

# Room left in each window for tokens that merge differently once passages are joined.
_SLACK = 8
# Tokens taken by "passage N: " and the newline that separates passages.
_PASSAGE_LABEL = 6
_SENTENCE_END = (".", "!", "?", "\n", ";")
# On the CPU a padded token costs about as much as a real one (0.15 ms each for this
# encoder on the 2-core dev machine), while a separate forward pass costs about 6 ms
# more (the weights are read again). A row joins a batch only while its padding is
# cheaper than a pass of its own: a 280-token unit and a 51-token one batched together
# cost 2 x 280 tokens, apart 331 tokens and one more pass (the call: 114 -> 81 ms).
_CPU_PAD_SLACK = 32
# ONNX Runtime's cost per row grows with the tokens of the run (CPU time, one thread,
# per row: 48-token rows 10.6 ms batched by 8 against 15.9 ms alone; 128-token rows
# the same either way; 303-token rows 92 ms batched by 8 against 78 ms alone), so its
# runs hold at most this many tokens (a longer row runs alone).
_ONNX_RUN_TOKENS = 512


@dataclass
class _Segment:
    """One forward-pass row: a context window beside one piece of the answer."""

    owner: int
    piece: int
    window: int
    input_ids: list[int]
    type_ids: list[int] | None
    answer_positions: list[int]
    answer_offsets: list[tuple[int, int]]


@dataclass
class _Piece:
    start: int
    text: str
    windows: int = 0


@dataclass
class _Plan:
    pieces: list[_Piece]
    segments: list[_Segment]


class TransformerDetector(BaseDetector):
    """Any Hugging Face token classifier in the LettuceDetect format.

    The model reads ``[CLS] prompt [SEP] answer [SEP]`` (the prompt holds the question
    and numbered passages) and labels answer tokens 0 = supported, 1 = hallucinated.
    Runs of tokens above ``token_threshold`` become character spans of the answer.

    Long inputs are never truncated. When the context does not fit beside the
    question and answer, it is split into windows that each do (passages are kept
    whole where they fit, long ones are cut with ``window_overlap`` tokens of
    overlap), the answer is scored against the windows, and a token counts as
    supported when any window supports it (its probability is the minimum over
    windows). Windows are scored in rounds, the one sharing most words with the answer
    first; with ``early_exit`` an answer whose tokens are all supported already needs
    no further window. An answer too long for one window is scored in pieces. The
    result's ``coverage`` says what was done.

    Example:
        >>> detector = TransformerDetector("KRLabsOrg/lettucedect-base-modernbert-en-v1")
        >>> result = detector.detect(
        ...     context=["The Eiffel Tower was built from 1887 to 1889."],
        ...     question="When was the Eiffel Tower built?",
        ...     answer="It was built in 1950.",
        ... )
        >>> [span.text for span in result.spans]  # doctest: +SKIP
        ['1950']
    """

    # Whether a subclass adjusts token probabilities by rules after the model (the
    # evidence detector does); the folder's span shift then comes after those rules.
    _rules_adjust_tokens = False

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        config: DetectionConfig | None = None,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        revision: str | None = None,
        local_files_only: bool | None = None,
        model_id: str | None = None,
        backend: str = "auto",
        trust_remote_code: bool = False,
    ) -> None:
        """Load the model (once per process) and prepare the detector.

        Args:
            model: Local model folder or Hugging Face Hub id.
            config: Thresholds and limits; defaults to :class:`DetectionConfig`.
            device: ``None``/``"auto"`` picks CUDA, then MPS, then the CPU.
            dtype: ``None`` picks bf16/fp16 on GPUs and fp32 on the CPU.
            revision: Hub revision for hub ids.
            local_files_only: Use only the local Hugging Face cache for hub ids.
            model_id: Name reported in results; defaults to ``model``.
            backend: ``"auto"`` runs the fp32 ONNX graph of a local BERT-family
                folder on a CPU with the ``fast`` extra, torch elsewhere; ``"torch"``
                and ``"onnx"`` force one.
            trust_remote_code: Let a checkpoint that ships its own model code run it
                (e.g. LettuceDetect's EuroBERT models); off by default, and such a
                checkpoint is then refused.

        Raises:
            ModelNotAvailableError: The model is neither local nor reachable.
            ModelLoadError: The files are not a two-class token classifier, or need
                their own code without ``trust_remote_code=True``.
            ConfigError: An unknown backend, or ``"onnx"`` where it cannot run.
        """
        self._loaded: LoadedModel = load_token_classifier(
            model,
            device=device,
            dtype=dtype,
            revision=revision,
            local_files_only=local_files_only,
            backend=backend,
            trust_remote_code=trust_remote_code,
        )
        # Read before the base class checks that ``aggregation="calibrated"`` can be met.
        self._response = read_response_calibration(self._loaded.config)
        self._claim_check = self._load_claim_check(model, device, dtype, backend)
        super().__init__(model_id=model_id or os.fspath(model), config=config)
        window = self.config.max_length or self._loaded.max_length
        self._window = min(window, self._loaded.max_length)
        tokenizer = self._loaded.tokenizer
        self._specials = tokenizer.num_special_tokens_to_add(pair=True)
        self._uses_type_ids = "token_type_ids" in self._loaded.input_names
        self._pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self._unk_id = tokenizer.unk_token_id
        self._scale, self._shift, self._span_shift = _calibration(self._loaded.config)
        if not self._rules_adjust_tokens:
            # Without rules between the two, the span shift is one more Platt shift.
            self._shift, self._span_shift = self._shift + self._span_shift, 0.0

    def _calibrates_responses(self) -> bool:
        return self._response is not None

    def _load_claim_check(
        self,
        model: str | os.PathLike[str],
        device: str | torch.device | None,
        dtype: str | torch.dtype | None,
        backend: str,
    ) -> ClaimCheck | None:
        """The entailment model the response map reads, from the same folder (or none).

        A map with a ``claim`` term was fitted with the NLI branch of this folder's
        encoder (the bundled layout): it is loaded once, sharing the encoder.
        """
        if self._response is None or not self._response.reads_claims:
            return None
        from ..nli import BundledNLI

        folder = Path(model)
        if not (folder / "heads.safetensors").is_file():
            raise ModelLoadError(
                f"the response calibration of {folder} reads the claim check, which needs "
                "the bundled layout (heads.safetensors and an NLI branch) beside the model"
            )
        return BundledNLI(path=folder, device=device, dtype=dtype, backend=backend)

    def _response_score(
        self, item: DetectionInput, tokens: Sequence[TokenScore], spans: Sequence[HallucinationSpan]
    ) -> float:
        if self.config.aggregation != "calibrated" or self._response is None:
            return super()._response_score(item, tokens, spans)
        response = self._response
        text = AnswerText.of(item.answer)  # the sentences the token rules split, once
        absent = self._absent_words(item) if response.reads_absent_words else []
        return calibrated_score(
            response,
            text,
            tokens,
            absent,
            token_threshold=self.config.token_threshold,
            conflicts=conflict_marks(text, item.context) if response.reads_rules else ((), ()),
            claims=claim_logits(self._claim_check, text, item.context)
            if self._claim_check is not None
            else (),
        )

    def _absent_word_starts(self, item: DetectionInput) -> list[int]:
        """Where the answer's absent words start, as the response calibration reads them."""
        return [start for start, _ in self._absent_words(item)]

    def _absent_words(self, item: DetectionInput) -> list[tuple[int, str]]:
        """The answer's absent words (start, form), as the response calibration reads them."""
        return absent_words(item)

    @property
    def device(self) -> torch.device:
        """The device the model runs on."""
        return self._loaded.device

    @property
    def backend(self) -> str:
        """What runs the model: ``"torch"``, ``"onnx-int8"`` or ``"onnx-fp32"``."""
        graph = self._loaded.graph
        return f"onnx-{graph.quantization}" if graph is not None else "torch"

    @property
    def max_length(self) -> int:
        """The window, in tokens, of one forward-pass row."""
        return self._window

    def _max_length(self) -> int:
        return self._window

    # -- planning: which rows to run ---------------------------------------------------

    def _encode(self, prompts: list[str], answers: list[str]) -> Any:
        with self._loaded.tokenizer_lock:
            return self._loaded.tokenizer(
                prompts,
                answers,
                add_special_tokens=True,
                return_offsets_mapping=True,
                return_attention_mask=False,
                truncation=False,
                verbose=False,
            )

    def _count(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        """Token offsets of each text encoded alone, without special tokens."""
        with self._loaded.tokenizer_lock:
            enc = self._loaded.tokenizer(
                texts,
                add_special_tokens=False,
                return_offsets_mapping=True,
                return_attention_mask=False,
                truncation=False,
                verbose=False,
            )
        return [list(map(tuple, offsets)) for offsets in enc["offset_mapping"]]

    def _count_many(self, texts: list[str]) -> list[int]:
        """Token counts of each text encoded alone, without special tokens.

        The counts of :meth:`_count`, read from the fast tokenizer's own encoder: evidence
        selection counts hundreds of context sentences per call, and turning each encoding
        into Python lists of ids and offsets cost more than encoding it (20-30 ms of a call
        at a 20k-token context).
        """
        if not texts:
            return []
        loaded = self._loaded
        backend = getattr(loaded.tokenizer, "backend_tokenizer", None)
        if backend is None:
            return [len(offsets) for offsets in self._count(texts)]
        with loaded.tokenizer_lock:
            _untruncated(loaded.tokenizer, backend)
            encode = getattr(backend, "encode_batch_fast", backend.encode_batch)
            encodings = encode(texts, add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def _segments(self, owner: int, piece: int, prompts: list[str], text: str) -> list[_Segment]:
        enc = self._encode(prompts, [text] * len(prompts))
        rows = []
        for row in range(len(prompts)):
            seq_ids = enc.sequence_ids(row)
            offsets = enc["offset_mapping"][row]
            positions = [i for i, s in enumerate(seq_ids) if s == 1]
            rows.append(
                _Segment(
                    owner=owner,
                    piece=piece,
                    window=row,
                    input_ids=enc["input_ids"][row],
                    type_ids=enc["token_type_ids"][row] if self._uses_type_ids else None,
                    answer_positions=positions,
                    answer_offsets=[tuple(offsets[i]) for i in positions],
                )
            )
        return rows

    def _plan_batch(self, inputs: Sequence[DetectionInput]) -> list[_Plan]:
        # The common case, everything fits in one window, costs one batched encode.
        # Every whitespace-separated word is at least one token, so an input with more
        # words than the window cannot fit: it skips that encode and goes to windowing.
        prompts = [format_prompt(item.context, item.question) for item in inputs]
        maybe = [
            i
            for i, item in enumerate(inputs)
            if len(prompts[i].split()) + len(item.answer.split()) <= self._window
        ]
        enc = (
            self._encode([prompts[i] for i in maybe], [inputs[i].answer for i in maybe])
            if maybe
            else None
        )
        row = {owner: n for n, owner in enumerate(maybe)}
        plans = []
        for owner, item in enumerate(inputs):
            n = row.get(owner)
            if n is not None and enc is not None and len(enc["input_ids"][n]) <= self._window:
                plans.append(self._single_window_plan(owner, n, item, enc))
            else:
                plans.append(self._windowed_plan(owner, item))
        return plans

    def _single_window_plan(self, owner: int, row: int, item: DetectionInput, enc: Any) -> _Plan:
        seq_ids = enc.sequence_ids(row)
        offsets = enc["offset_mapping"][row]
        positions = [i for i, s in enumerate(seq_ids) if s == 1]
        segment = _Segment(
            owner=owner,
            piece=0,
            window=0,
            input_ids=enc["input_ids"][row],
            type_ids=enc["token_type_ids"][row] if self._uses_type_ids else None,
            answer_positions=positions,
            answer_offsets=[tuple(offsets[i]) for i in positions],
        )
        return _Plan(pieces=[_Piece(start=0, text=item.answer, windows=1)], segments=[segment])

    def _windowed_plan(self, owner: int, item: DetectionInput) -> _Plan:
        overhead = self._count_many([format_prompt([""], item.question)])[0] + self._specials
        room = self._window - overhead - _SLACK
        if room < 32:
            raise ContextTooLongError(
                f"the question alone takes {overhead} of the model's {self._window} tokens; "
                "there is no room left for context and answer"
            )
        answer_offsets = self._count([item.answer])[0]
        piece_budget = len(answer_offsets) if len(answer_offsets) <= room // 2 else room // 2
        plan = _Plan(pieces=[], segments=[])
        for piece_index, (start, end) in enumerate(
            _split_answer(item.answer, answer_offsets, piece_budget)
        ):
            text = item.answer[start:end]
            piece = _Piece(start=start, text=text)
            n_piece = self._count_many([text])[0]
            prompts = self._context_windows(item, room - n_piece, text)
            piece.windows = len(prompts)
            plan.pieces.append(piece)
            plan.segments.extend(self._fit(owner, piece_index, item, prompts, text, room - n_piece))
        return plan

    def _fit(
        self,
        owner: int,
        piece: int,
        item: DetectionInput,
        prompts: list[str],
        text: str,
        budget: int,
    ) -> list[_Segment]:
        # Token counts of separately encoded passages are an estimate; check the real
        # rows and rebuild with a smaller budget in the rare case one overflows.
        for _ in range(6):
            rows = self._segments(owner, piece, prompts, text)
            if all(len(r.input_ids) <= self._window for r in rows):
                return rows
            budget = int(budget * 0.85)
            prompts = self._context_windows(item, budget, text)
        raise ContextTooLongError(f"could not fit the input into windows of {self._window} tokens")

    def _context_windows(self, item: DetectionInput, budget: int, text: str) -> list[str]:
        """Context windows for answer ``text``, the one sharing most of its words first."""
        if budget < 16:
            raise ContextTooLongError(
                f"the answer leaves only {budget} tokens of the {self._window}-token window "
                "for context"
            )
        chunk_budget = budget - _PASSAGE_LABEL
        overlap = min(self.config.window_overlap, chunk_budget // 2)
        chunks: list[tuple[str, int]] = []
        for passage, offsets in zip(item.context, self._count(list(item.context)), strict=True):
            for start, end in _token_chunks(len(offsets), chunk_budget, overlap):
                text = passage[offsets[start][0] : offsets[end - 1][1]]
                chunks.append((text, end - start + _PASSAGE_LABEL))
        windows: list[list[str]] = []
        used = budget
        for text, cost in chunks:
            if used + cost > budget:
                windows.append([])
                used = 0
            windows[-1].append(text)
            used += cost
        if len(windows) > self.config.max_windows:
            raise ContextTooLongError(
                f"the context needs {len(windows)} windows of {self._window} tokens, more than "
                f"max_windows={self.config.max_windows}; raise max_windows or shorten the context"
            )
        words = _words(text)
        # a stable sort: equally relevant windows keep their document order
        windows.sort(key=lambda w: -len(words & _words(" ".join(w))))
        return [format_prompt(w, item.question) for w in windows]

    # -- running -----------------------------------------------------------------------

    def _score_tokens(self, inputs: Sequence[DetectionInput]) -> list[TokenScoring]:
        plans = self._plan_batch(inputs)
        segments = [s for plan in plans for s in plan.segments]
        if self.config.early_exit:
            probabilities = self._forward_in_rounds(segments)
        else:
            probabilities = self._forward(segments)
        return [
            self._assemble(item, plan, probabilities)
            for item, plan in zip(inputs, plans, strict=True)
        ]

    def _forward_in_rounds(self, segments: list[_Segment]) -> dict[int, list[float]]:
        """Window ``k`` of every answer piece that still has a flagged token, for k = 0, 1, ..."""
        pieces: dict[tuple[int, int], list[_Segment]] = {}
        for segment in segments:
            pieces.setdefault((segment.owner, segment.piece), []).append(segment)
        out: dict[int, list[float]] = {}
        limit = self.config.token_threshold
        # A piece leaves the rounds for good once none of its tokens is flagged; later
        # rounds must not look at windows it never ran (that was a KeyError).
        active = set(pieces)

        def still_flagged(key: tuple[int, int], k: int) -> bool:
            return any(p > limit for p in _min_over_windows(pieces[key][:k], out))

        for k in range(max((len(rows) for rows in pieces.values()), default=0)):
            if k > 0:
                active = {key for key in active if still_flagged(key, k)}
            due = [pieces[key][k] for key in active if k < len(pieces[key])]
            if not due:
                break
            out.update(self._forward(due))
        return out

    def _forward(self, segments: list[_Segment]) -> dict[int, list[float]]:
        """Hallucination probability of each segment's answer tokens, keyed by ``id``."""
        order = sorted(segments, key=lambda s: len(s.input_ids), reverse=True)
        out: dict[int, list[float]] = {}
        on_cpu = self._loaded.device.type == "cpu"
        slack = _CPU_PAD_SLACK if on_cpu else None
        graph = self._loaded.graph
        size = self.config.batch_size
        if graph is not None and graph.rows_per_run is not None:
            size = min(size, graph.rows_per_run)
        tokens = _ONNX_RUN_TOKENS if graph is not None else None
        for batch in _batches(order, size, slack, tokens):
            margin = self._margins(self._pad(batch))
            # A calibrated model maps its logit margin to a probability that means
            # what it says (Platt scaling fitted on held-out data, see the model card).
            probs = 1.0 / (1.0 + np.exp(-(self._scale * margin + self._shift)))
            for row, segment in enumerate(batch):
                out[id(segment)] = probs[row, segment.answer_positions].tolist()
        return out

    def _margins(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """Logit of class 1 minus class 0 per token, ``[rows, tokens]`` in float64."""
        graph = self._loaded.graph
        if graph is not None:
            logits = graph.run(feeds, ["logits"])[0].astype(np.float64)
        else:
            import torch

            device = self._loaded.device
            with torch.inference_mode():
                tensors = {k: torch.from_numpy(v).to(device) for k, v in feeds.items()}
                logits = self._loaded.model(**tensors).logits.float().cpu().numpy()
            logits = logits.astype(np.float64)
        margin: np.ndarray = logits[..., 1] - logits[..., 0]
        return margin

    def _pad(self, batch: list[_Segment]) -> dict[str, np.ndarray]:
        width = max(len(s.input_ids) for s in batch)
        ids = np.full((len(batch), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        types = np.zeros((len(batch), width), dtype=np.int64)
        for row, segment in enumerate(batch):
            n = len(segment.input_ids)
            ids[row, :n] = segment.input_ids
            mask[row, :n] = 1
            if segment.type_ids is not None:
                types[row, :n] = segment.type_ids
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._uses_type_ids:
            feeds["token_type_ids"] = types
        return feeds

    def _assemble(
        self, item: DetectionInput, plan: _Plan, probabilities: dict[int, list[float]]
    ) -> TokenScoring:
        tokens: list[TokenScore] = []
        for index, piece in enumerate(plan.pieces):
            rows = [s for s in plan.segments if s.piece == index and id(s) in probabilities]
            supported = _min_over_windows(rows, probabilities)
            first = rows[0]
            for position, (start, end), p in zip(
                first.answer_positions, first.answer_offsets, supported, strict=True
            ):
                a, b = piece.start + start, piece.start + end
                # Pure whitespace tokens (byte-level newlines) carry no claim, and a token
                # the vocabulary cannot read ([UNK]) was not checked: neither is scored.
                if end <= start or item.answer[a:b].isspace():
                    continue
                if first.input_ids[position] == self._unk_id:
                    continue
                tokens.append(
                    TokenScore.model_construct(
                        start=a, end=b, text=item.answer[a:b], probability=min(max(p, 0.0), 1.0)
                    )
                )
        windows = max(p.windows for p in plan.pieces)
        coverage = Coverage(
            answer_chars=len(item.answer),
            answer_chars_scored=sum(t.end - t.start for t in tokens),
            answer_pieces=len(plan.pieces),
            context_windows=windows,
            context_split=windows > 1,
            max_length=self._window,
        )
        return tokens, coverage


def _untruncated(tokenizer: Any, backend: Any) -> None:
    """Put the fast tokenizer's encoder in the state ``tokenizer(..., truncation=False)`` uses.

    Other callers of the same tokenizer (the NLI branch) leave truncation and padding
    set on the shared encoder; the wrapper resets them on its next call, a direct call
    must do the same.
    """
    if backend.truncation is not None:
        backend.no_truncation()
    if backend.padding is not None:
        backend.no_padding()
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    if getattr(backend, "encode_special_tokens", split) != split:
        backend.encode_special_tokens = split


def _calibration(config: Any) -> tuple[float, float, float]:
    """Platt scale, shift and span shift stored in the model's config (``truthlens.calibration``).

    ``span_shift`` is a logit shift applied to every token after the runtime rules
    (:func:`shifted`); 0 for a folder without one. The loader has checked that each is a
    finite number (``check_config_numbers``).
    """
    extra = getattr(config, "truthlens", None)
    calibration = extra.get("calibration") if isinstance(extra, dict) else None
    if not isinstance(calibration, dict):
        return 1.0, 0.0, 0.0
    return (
        float(calibration.get("scale", 1.0)),
        float(calibration.get("shift", 0.0)),
        float(calibration.get("span_shift", 0.0)),
    )


def shifted(tokens: list[TokenScore], shift: float) -> list[TokenScore]:
    """``tokens`` with ``shift`` added to the logit of each probability (0: unchanged).

    The bundled detector's span shift: its token scale is set so that the 0.5 token
    threshold marks the characters people mark on RAG answers.
    It comes after the rules, so their fixed probabilities keep their meaning, and it is
    monotone, so every ranking, and any response map that reads the logit linearly, is
    unchanged up to its bias.
    """
    if shift == 0.0:
        return tokens
    return [
        t.model_copy(
            update={"probability": 1.0 / (1.0 + math.exp(-(_logit(t.probability) + shift)))}
        )
        for t in tokens
    ]


def _words(text: str) -> set[str]:
    return {w for w in words(text) if len(w) > 2 or w.isdigit()}


def _min_over_windows(rows: list[_Segment], probabilities: dict[int, list[float]]) -> list[float]:
    """A token is supported when any window supports it: the minimum probability."""
    first = probabilities[id(rows[0])]
    merged = list(first)
    for row in rows[1:]:
        for i, p in enumerate(probabilities[id(row)]):
            merged[i] = min(merged[i], p)
    return merged


def _token_chunks(n_tokens: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of at most ``size`` that overlap by ``overlap``."""
    if n_tokens == 0:
        return []
    if n_tokens <= size:
        return [(0, n_tokens)]
    step = max(size - overlap, 1)
    ranges = []
    start = 0
    while True:
        end = min(start + size, n_tokens)
        ranges.append((start, end))
        if end == n_tokens:
            return ranges
        start += step


def _split_answer(
    answer: str, offsets: list[tuple[int, int]], budget: int
) -> list[tuple[int, int]]:
    """Character ranges of answer pieces of at most ``budget`` tokens.

    Cuts prefer the end of a sentence, then a word boundary, so pieces read naturally
    and re-tokenise the way they were counted.
    """
    pieces = []
    first = 0
    n = len(offsets)
    while first < n:
        last = min(first + budget, n)
        if last < n:
            last = _best_cut(answer, offsets, first, last)
        pieces.append((offsets[first][0], offsets[last - 1][1]))
        first = last
    return pieces


def _best_cut(answer: str, offsets: list[tuple[int, int]], first: int, last: int) -> int:
    half = first + (last - first) // 2
    for k in range(last - 1, half, -1):
        end = offsets[k][1]
        if end > offsets[k][0] and answer[end - 1] in _SENTENCE_END:
            return k + 1
    for k in range(last - 1, half, -1):
        if offsets[k + 1][0] > offsets[k][1]:
            return k + 1
    return last


def _batches(
    order: list[_Segment], size: int, slack: int | None, tokens: int | None = None
) -> list[list[_Segment]]:
    """Consecutive runs of ``order`` (longest first) of at most ``size`` rows.

    With ``slack``, a run also ends where a row is more than ``slack`` tokens shorter
    than the run's first row, so no row is padded by more than that. With ``tokens``, a
    run also ends before its padded size (rows times the first row's length) would pass
    ``tokens``; a row longer than that runs alone.
    """
    out: list[list[_Segment]] = []
    for segment in order:
        current = out[-1] if out else None
        if (
            current is None
            or len(current) >= size
            or (slack is not None and len(current[0].input_ids) - len(segment.input_ids) > slack)
            or (tokens is not None and (len(current) + 1) * len(current[0].input_ids) > tokens)
        ):
            out.append([segment])
        else:
            current.append(segment)
    return out
