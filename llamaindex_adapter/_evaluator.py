"""The detector as a LlamaIndex evaluator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Unpack

from llama_index.core.evaluation import BaseEvaluator, EvaluationResult
from llama_index.core.prompts.mixin import PromptDictType

from truthlens_integrations.core import BlockedResponseError
from truthlens_integrations.core.engine import GuardKwargs, TruthLens, Verdict
from truthlens_integrations.core.policy import PolicySource

from ._common import build_engine, describe_spans, verdict_of

__all__ = ["GuardRun", "TruthLensEvaluator", "original_question"]

# FeedbackQueryTransformation (RetryQueryEngine's retries) prepends the bad answer and
# the feedback to the question and ends with this line, then the question itself.
_FEEDBACK_MARKER = "Now answer the question.\n"


def original_question(query: str | None) -> str | None:
    """The user's question inside a query rewritten by ``RetryQueryEngine``.

    A retry's query holds the previous answer, the evaluator's feedback and then the
    question; routing and the detector's prompt should see only the question.

    Args:
        query: The query string the evaluator received.

    Returns:
        The text after the last feedback marker, or ``query`` unchanged.
    """
    if query is None or _FEEDBACK_MARKER not in query:
        return query
    return query.rsplit(_FEEDBACK_MARKER, 1)[1].strip() or query


class TruthLensEvaluator(BaseEvaluator):
    """Judges a response against its contexts with the guard's detector and NLI filter.

    ``passing`` is the guard's ``PASS``; ``score`` is ``1 - hallucination score``
    (higher is better, as with LlamaIndex's own evaluators; ``None`` when detection
    did not run, e.g. a prompt the classifier found non-factual); ``feedback`` names
    the unsupported spans, so LlamaIndex's ``RetryQueryEngine`` feeds them back to
    the query engine. A factual question answered without contexts does not pass:
    an unchecked answer is never reported as faithful.

    Inside ``RetryQueryEngine`` the retried query carries the previous answer and
    the feedback; only the question part is routed and checked
    (:func:`original_question`).

    Only detection runs here (the evaluator judges, it does not rewrite); use
    :class:`TruthLensQueryEngine` for mitigation.

    Args:
        engine: The guard engine; built from ``config`` when omitted.
        config: A policy (path, YAML text, dict) for a new engine.
        **options: The policy knobs, on every route (``mode``, ``threshold``,
            ``action``), and engine options (see
            :class:`~truthlens_integrations.core.engine.EngineOptions`), typed by
            :class:`~truthlens_integrations.core.engine.GuardKwargs`; with ``engine``
            given they apply to a copy of it.

    Raises:
        UnknownArgumentError: For an unknown keyword argument.
        InvalidArgumentError: For an argument of the wrong type.
    """

    def __init__(
        self,
        engine: TruthLens | None = None,
        *,
        config: PolicySource = None,
        **options: Unpack[GuardKwargs],
    ) -> None:
        self.engine = build_engine(
            engine, config, options, where="TruthLensEvaluator", own=("engine", "config")
        )

    def _get_prompts(self) -> PromptDictType:
        """No prompts: the evaluator calls no LLM."""
        return {}

    def _update_prompts(self, prompts_dict: PromptDictType) -> None:
        """No prompts to update."""

    def evaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """Evaluate in the calling thread (no event loop needed).

        Args:
            query: The question.
            response: The answer to judge.
            contexts: The passages it should be grounded in.
            **kwargs: Ignored (LlamaIndex passes evaluator-specific extras).

        Returns:
            The evaluation; ``invalid_result`` when there was no response to judge.
        """
        del kwargs  # extras other evaluators take; none apply here
        with GuardRun() as run:
            if response and response.strip():
                run.verdict = self.engine.guard(**_arguments(query, response, contexts))
        return _result(query, response, contexts, run.verdict)

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        """Async :meth:`evaluate` (the models run in a worker thread)."""
        del kwargs
        with GuardRun() as run:
            if response and response.strip():
                run.verdict = await self.engine.aguard(**_arguments(query, response, contexts))
        return _result(query, response, contexts, run.verdict)


class GuardRun:
    """Holds the verdict of one guard call, made inside ``with GuardRun() as run:``.

    An engine built with ``on_block="raise"`` raises :class:`BlockedResponseError` for a
    withheld answer; the components here judge or respond to it instead, so the
    error's verdict becomes the run's and the error stops here.

    Attributes:
        verdict: The verdict; ``None`` until the guard ran.
    """

    def __init__(self) -> None:
        self.verdict: Verdict | None = None

    def __enter__(self) -> GuardRun:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: object
    ) -> bool:
        if isinstance(error, BlockedResponseError):
            self.verdict = verdict_of(error)  # re-raises an error without a verdict
            return True
        return False


def _arguments(query: str | None, response: str, contexts: Sequence[str] | None) -> dict[str, Any]:
    """The guard's inputs: a retried query is routed and checked by its question part."""
    return {
        "context": list(contexts or []),
        "question": original_question(query),
        "answer": response,
    }


def _invalid(
    query: str | None,
    response: str | None,
    contexts: Sequence[str] | None,
    reason: str,
    feedback: str | None = None,
) -> EvaluationResult:
    """A result that neither passes nor fails: nothing was judged, for ``reason``."""
    return EvaluationResult(
        query=query,
        response=response,
        contexts=contexts,
        passing=None,
        invalid_result=True,
        invalid_reason=reason,
        feedback=feedback,
    )


def _feedback(verdict: Verdict) -> str:
    if verdict.spans:
        return (
            "These parts of the answer are not supported by the context:\n"
            f"{describe_spans(verdict.spans)}\n"
            "Answer again using only facts stated in the context."
        )
    if verdict.detected and verdict.score is not None:
        return (
            f"The answer as a whole is likely not supported by the context (score "
            f"{verdict.score:.2f}, threshold {verdict.threshold:.2f}); no single part "
            "stands out.\nAnswer again using only facts stated in the context."
        )
    if verdict.unverified:
        return "The question needs a fact check, but no context was retrieved to check against."
    if not verdict.checked:
        return f"Not checked ({verdict.not_checked_reason}): nothing was verified."
    return "Every part of the answer is supported by the context."


def _result(
    query: str | None, response: str | None, contexts: Sequence[str] | None, verdict: Verdict | None
) -> EvaluationResult:
    if verdict is None:  # no response to judge: the guard did not run
        return _invalid(query, response, contexts, "no response to evaluate")
    if not verdict.checked:
        # Not checked is never clean: no pass, no score; the reason says why.
        reason = f"not checked: {verdict.not_checked_reason}"
        return _invalid(query, response, contexts, reason, _feedback(verdict.full()))
    return EvaluationResult(
        query=query,
        response=response,
        contexts=contexts,
        passing=verdict.passed,
        score=None if verdict.score is None else round(1.0 - verdict.score, 6),
        # The evaluator judges the caller's own response: its feedback names the
        # flagged parts even when the policy withheld them from users.
        feedback=_feedback(verdict.full()),
    )
