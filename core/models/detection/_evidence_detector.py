"""A token classifier that judges each answer unit against selected evidence."""

from __future__ import annotations

from collections.abc import Sequence

from ..._errors import ContextTooLongError
from ..._text import AnswerText
from ..._types import DetectionInput
from ._base import TokenScoring
from ._evidence import ContextIndex, EvidenceRow, plan_rows
from ._lexical import absent_words
from ._rules import adjust_tokens, uncounted_spans
from ._transformer import TransformerDetector, _Piece, _Plan, _Segment, shifted

__all__ = ["EvidenceDetector"]


class EvidenceDetector(TransformerDetector):
    """Token-level detection over selected evidence instead of every context window.

    The answer is cut into units of one or a few sentences (``unit_tokens``); each unit
    is paired with the context sentences that share most with its sentences (BM25 over the
    context, one query per sentence, ``evidence_tokens`` of them, from anywhere in the
    context) and the model reads
    ``[CLS] question + evidence [SEP] unit [SEP]``. The verdict does not depend on the
    order of the passages, the cost grows with the answer and not with the context, and
    facts stated far apart are read side by side. The result's ``coverage`` reports how
    many context sentences were read. Numbers and units are also aligned with the
    context's, negations are compared with the context sentences that say the same thing,
    and answers that only say the sources lack something are not flagged (``_rules``).

    It takes the same models as :class:`TransformerDetector` (the bundled model is
    trained for this input); LettuceDetect checkpoints were trained on whole windows and
    are best used with :class:`TransformerDetector`.
    """

    _rules_adjust_tokens = True

    def _evidence_plans(
        self, inputs: Sequence[DetectionInput]
    ) -> tuple[list[_Plan], list[tuple[int, int]]]:
        """One segment per answer unit, and (sentences read, sentences in context) per input."""
        plans = []
        rows_of: list[list[EvidenceRow]] = []
        sentences: list[tuple[int, int]] = []
        for item in inputs:
            index = ContextIndex(item.context)
            rows = plan_rows(
                index,
                item.question,
                AnswerText.of(item.answer),  # the answer's sentences, split once
                count_many=self._count_many,
                unit_tokens=self.config.unit_tokens,
                evidence_tokens=self.config.evidence_tokens,
            )
            rows_of.append(rows)
            sentences.append((max((r.sentences for r in rows), default=0), len(index.sentences)))
        flat = [(owner, n, row) for owner, rows in enumerate(rows_of) for n, row in enumerate(rows)]
        enc = self._encode(
            [row.prompt for _, _, row in flat],
            [inputs[owner].answer[row.start : row.end] for owner, _, row in flat],
        )
        segments: dict[int, list[_Segment]] = {}
        for k, (owner, n, _) in enumerate(flat):
            if len(enc["input_ids"][k]) > self._window:
                raise ContextTooLongError(
                    f"an answer unit and its evidence take {len(enc['input_ids'][k])} tokens, "
                    f"more than the model's {self._window}; lower evidence_tokens or unit_tokens"
                )
            seq_ids = enc.sequence_ids(k)
            offsets = enc["offset_mapping"][k]
            positions = [i for i, s in enumerate(seq_ids) if s == 1]
            segments.setdefault(owner, []).append(
                _Segment(
                    owner=owner,
                    piece=n,
                    window=0,
                    input_ids=enc["input_ids"][k],
                    type_ids=enc["token_type_ids"][k] if self._uses_type_ids else None,
                    answer_positions=positions,
                    answer_offsets=[tuple(offsets[i]) for i in positions],
                )
            )
        for owner, item in enumerate(inputs):
            pieces = [
                _Piece(start=row.start, text=item.answer[row.start : row.end], windows=1)
                for row in rows_of[owner]
            ]
            plans.append(_Plan(pieces=pieces, segments=segments.get(owner, [])))
        return plans, sentences

    def _absent_words(self, item: DetectionInput) -> list[tuple[int, str]]:
        # What states nothing the context could lack is not counted as absent: an
        # abstention's words, citation numbers, clock times (the unit rule judges them),
        # source framing and connectives (_rules.uncounted_spans).
        skip = uncounted_spans(AnswerText.of(item.answer), item.context, item.question)
        return absent_words(item, skip)

    def _score_tokens(self, inputs: Sequence[DetectionInput]) -> list[TokenScoring]:
        plans, sentences = self._evidence_plans(inputs)
        probabilities = self._forward([s for plan in plans for s in plan.segments])
        out = []
        for item, plan, (read, total) in zip(inputs, plans, sentences, strict=True):
            tokens, coverage = self._assemble(item, plan, probabilities)
            text = AnswerText.of(item.answer)  # the one split of the planning above
            tokens = adjust_tokens(tokens, text, item.context, item.question)
            tokens = shifted(tokens, self._span_shift)
            coverage = coverage.model_copy(
                update={
                    "context_windows": 1,
                    "context_split": read < total,
                    "evidence_sentences": read,
                    "context_sentences": total,
                }
            )
            out.append((tokens, coverage))
        return out
