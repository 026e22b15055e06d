"""Premium mode: cross-model verification with a judge.

Each round: the verification models answer the grounded question in parallel; the
primary answer (the best so far) is split into claims (sentences) and each claim is
checked against every verifier's answer with NLI (a lexical check when no NLI model
is available); the votes are merged by majority, weighted confidence, or segment
replacement (Finch-Zk); when the models disagree, or the merge alone still does not
pass the detector, a judge writes the final answer, which is detected again.

A reply that answers nothing (about nothing the request mentions, or saying nothing the
question does not: "garbage", the question echoed, "The Eiffel Tower.") is a failed step,
never a candidate: a reply without claims gives the detector nothing to flag, so it
would score low and "converge".
"""

from __future__ import annotations

import re
from collections.abc import Generator, Sequence

from .._errors import LLMError, LLMTimeoutError
from .._types import NLILabel
from ..llm import LLM, ChatMessage, LLMResponse
from ._loop import LoopSettings, MitigationOptions, Recorder, ask_model
from ._ops import Generate, GenerateAll, Ledger, Loop, Op, assess, explain, generate_all
from ._prompts import absurd_reason, build_answer_messages, build_judge_messages, clean_output
from ._results import Assessment, ClaimCheck, MitigationStatus
from ._text import content_words, jaccard, numbers, sentences

__all__ = ["VERIFIER_STYLES", "cross_model", "lexical_label", "merge_claims", "tally_claims"]

# Words that answer a yes/no question on their own ("No.", "It was not.").
_POLAR = re.compile(r"\b(?:yes|no|not|never|none|nothing|nobody)\b", re.IGNORECASE)

#: System-prompt variants given to verifiers in turn, so that verifiers sharing one
#: model still answer from different angles (prompt diversity; weak but free).
VERIFIER_STYLES: tuple[str | None, ...] = (
    None,
    "Quote the documents' own words wherever you can.",
    "Answer in one or two short sentences.",
)


def lexical_label(premise: str, hypothesis: str) -> tuple[NLILabel, float]:
    """A crude NLI stand-in used when no NLI model is available.

    A number of the hypothesis missing from a premise that has numbers is a
    contradiction; 70% of its content words in the premise is entailment; the rest
    is neutral.
    """
    want, have = numbers(hypothesis), numbers(premise)
    if want and have and not want <= have:
        return "contradiction", 0.6
    words = content_words(hypothesis)
    if not words:
        return "neutral", 0.5
    coverage = len(words & content_words(premise)) / len(words)
    if coverage >= 0.7 and (not want or want <= have):
        return "entailment", 0.6
    return "neutral", 0.5


def tally_claims(
    claims: Sequence[str],
    labels: Sequence[Sequence[NLILabel]],
    weights: Sequence[float],
    *,
    method: str,
) -> list[ClaimCheck]:
    """Votes per claim.

    Args:
        claims: The primary answer's claims.
        labels: ``labels[i][m]``: verifier ``m``'s judgement of claim ``i``.
        weights: Weight per verifier (all 1.0 for ``majority``).
        method: ``majority``, ``weighted`` or ``replace``.

    Returns:
        One check per claim; ``supported`` / ``contradicted`` need more than half of
        the votes (``majority``) or of the total weight (the other methods).
    """
    total = sum(weights) or 1.0
    checks: list[ClaimCheck] = []
    for claim, row in zip(claims, labels, strict=True):
        support = sum(1 for x in row if x == "entailment")
        contra = sum(1 for x in row if x == "contradiction")
        sw = sum(w for x, w in zip(row, weights, strict=True) if x == "entailment")
        cw = sum(w for x, w in zip(row, weights, strict=True) if x == "contradiction")
        if method == "majority":
            half = len(row) / 2
            supported, contradicted = support > half, contra > half
        else:
            supported, contradicted = sw > total / 2, cw > total / 2
        checks.append(
            ClaimCheck(
                claim=claim,
                support=support,
                contradict=contra,
                neutral=len(row) - support - contra,
                support_weight=round(sw, 6),
                contradict_weight=round(cw, 6),
                verdict="supported"
                if supported
                else "contradicted"
                if contradicted
                else "unverified",
            )
        )
    return checks


def _says_nothing(text: str, question: str | None) -> bool:
    """Whether ``text`` states nothing the question does not already say.

    A claim needs something of its own: a number, a content word the question lacks,
    or a yes/no or negation word. An abstention ("the documents do not say") has one.
    """
    if numbers(text) or _POLAR.search(text):
        return False
    return not content_words(text) - content_words(question or "")


def _refusal(
    text: str, *, reference: str, topic: frozenset[str] | None, question: str | None
) -> str | None:
    """Why a verifier's or the judge's reply is not an answer (``None`` when it is)."""
    reason = absurd_reason(text, reference=reference, topic=topic)
    if reason is None and _says_nothing(text, question):
        reason = "output that states nothing the question does not"
    return reason


def _best_sentence(claim: str, answer: str) -> str:
    options = [s for _, _, s in sentences(answer)] or [answer.strip()]
    return max(options, key=lambda s: jaccard(claim, s))


def merge_claims(
    checks: Sequence[ClaimCheck],
    *,
    flagged: Sequence[bool],
    answers: Sequence[str],
    labels: Sequence[Sequence[NLILabel]],
    weights: Sequence[float],
    method: str,
) -> tuple[str, list[ClaimCheck]]:
    """Build the merged answer from the claim checks.

    Supported claims stay. Contradicted claims are replaced by the most similar
    sentence of the highest-weight verifier that contradicts them (``replace``), or
    dropped (other methods). Unverified claims stay unless the detector flagged them.
    When nothing survives, the highest-weight verifier's answer is used.

    Returns:
        The merged text and the checks with ``replacement`` filled in.
    """
    parts: list[str] = []
    out: list[ClaimCheck] = []
    for i, check in enumerate(checks):
        if check.verdict == "supported" or (check.verdict == "unverified" and not flagged[i]):
            parts.append(check.claim)
            out.append(check)
            continue
        if check.verdict == "contradicted" and method == "replace":
            voters = [m for m, x in enumerate(labels[i]) if x == "contradiction"]
            source = max(voters, key=lambda m: weights[m])
            replacement = _best_sentence(check.claim, answers[source])
            if replacement not in parts:
                parts.append(replacement)
            out.append(check.model_copy(update={"replacement": replacement}))
            continue
        out.append(check)
    if not parts:
        best = max(range(len(answers)), key=lambda m: weights[m])
        return answers[best].strip(), out
    return " ".join(parts), out


def _analysis(checks: Sequence[ClaimCheck], verifiers: int) -> str:
    lines = []
    for i, c in enumerate(checks, start=1):
        line = (
            f'Claim {i}: "{c.claim}": supported by {c.support}/{verifiers}, contradicted by '
            f"{c.contradict}/{verifiers} -> {c.verdict}"
        )
        if c.replacement:
            line += f'; better-supported version: "{c.replacement}"'
        lines.append(line)
    return "\n".join(lines)


def _claim_flags(primary: Assessment, spans: Sequence[tuple[int, int, str]]) -> list[bool]:
    return [any(s.start < end and s.end > start for s in primary.spans) for start, end, _ in spans]


def _failure(
    results: Sequence[LLMResponse | LLMError], refused: Sequence[str] = ()
) -> tuple[MitigationStatus, str]:
    errors = [r for r in results if isinstance(r, LLMError)]
    if not errors:
        why = f" ({'; '.join(refused)})" if refused else ""
        return "llm_error", f"no verifier produced a usable answer{why}"
    if all(isinstance(e, LLMTimeoutError) for e in errors):
        return "llm_timeout", str(errors[0])
    return "llm_error", "; ".join(str(e) for e in errors)


def _labels(
    claims: Sequence[str], answers: Sequence[str]
) -> Generator[Op, object, list[list[NLILabel]]]:
    pairs = [(answer, claim) for claim in claims for answer in answers]
    predicted = yield from explain(pairs)
    flat: list[NLILabel] = (
        [label for label, _ in predicted]
        if predicted is not None and len(predicted) == len(pairs)
        else [lexical_label(p, h)[0] for p, h in pairs]
    )
    m = len(answers)
    return [flat[i * m : (i + 1) * m] for i in range(len(claims))]


def _ask_verifiers(
    context: Sequence[str],
    question: str | None,
    primary: Assessment,
    verifiers: Sequence[LLM],
    settings: LoopSettings,
    topic: frozenset[str] | None,
) -> Generator[Op, object, tuple[list[LLMResponse | LLMError], list[str], list[tuple[str, str]]]]:
    """Ask every verifier; returns the raw results, the usable answers and the refused ones.

    A refused reply comes with why: ``(reply, "verifier N: reason")``.
    """
    opts = settings.options
    calls = tuple(
        Generate(
            v,
            tuple(
                build_answer_messages(
                    context=context,
                    question=question,
                    style=VERIFIER_STYLES[i % len(VERIFIER_STYLES)],
                )
            ),
            role="verifier",
            max_tokens=opts.max_tokens,
            temperature=opts.verifier_temperature,
        )
        for i, v in enumerate(verifiers)
    )
    results = yield from generate_all(GenerateAll(calls))
    answers: list[str] = []
    refused: list[tuple[str, str]] = []
    for n, result in enumerate(results, start=1):
        if not isinstance(result, LLMResponse):
            continue
        text = clean_output(result.text)
        reason = _refusal(text, reference=primary.answer, topic=topic, question=question)
        if reason is None:
            answers.append(text)
        else:
            refused.append((result.text, f"verifier {n}: {reason}"))
    return results, answers, refused


def _weights(
    context: Sequence[str], answers: Sequence[str], method: str
) -> Generator[Op, object, list[float]]:
    if method == "majority":
        return [1.0] * len(answers)
    # A verifier whose own answer the detector trusts gets more say.
    weights: list[float] = []
    for answer in answers:
        checked = yield from assess(context, answer)
        weights.append(max(0.05, 1.0 - checked.effective_score))
    return weights


def _judge_messages(
    context: Sequence[str],
    question: str | None,
    primary: str,
    answers: Sequence[str],
    merged: str,
    checks: Sequence[ClaimCheck],
) -> list[ChatMessage]:
    candidates = [("primary", primary)] + [(f"verifier-{m + 1}", a) for m, a in enumerate(answers)]
    if merged not in (primary, *answers):
        candidates.append(("merged", merged))
    return build_judge_messages(
        context=context,
        question=question,
        candidates=candidates,
        analysis=_analysis(checks, len(answers)),
    )


def cross_model(
    context: Sequence[str],
    question: str | None,
    initial: Assessment,
    *,
    verifiers: Sequence[LLM],
    judge: LLM,
    settings: LoopSettings,
    ledger: Ledger,
) -> Loop:
    """Cross-model verification rounds until converged or out of rounds.

    Args:
        context: Grounding passages.
        question: The user's question.
        initial: The original answer's assessment.
        verifiers: The verification models (at least one).
        judge: The model that arbitrates disagreements.
        settings: Rounds, thresholds, ``require_consensus`` and options
            (``consensus`` method, temperatures).
        ledger: The request's cost ledger.

    Returns:
        The loop, to run with ``drive`` / ``adrive``.
    """
    rec = Recorder(initial, ledger, settings.convergence_threshold, grounding=[question, *context])
    status, error = yield from _rounds(rec, context, question, verifiers, judge, settings)
    return rec.result("cross_model", status, context=context, error=error, success="converged")


def _rounds(
    rec: Recorder,
    context: Sequence[str],
    question: str | None,
    verifiers: Sequence[LLM],
    judge: LLM,
    settings: LoopSettings,
) -> Generator[Op, object, tuple[MitigationStatus, str | None]]:
    """Run the rounds; return the status and error to stop with."""
    opts = settings.options
    for primary in rec.each_round(settings.max_iterations):
        results, answers, refused = yield from _ask_verifiers(
            context, question, primary, verifiers, settings, rec.topic
        )
        if not answers:
            status, error = _failure(results, [why for _, why in refused])
            # The refused replies stay in the history (the first one as the step's text).
            shown = refused[0][0] if refused else None
            rec.record("cross_check", None, error=error, answer=shown)
            return status, error
        merged, merged_text, checks = yield from _cross_check(rec, context, primary, answers, opts)
        disagree = any(c.verdict == "contradicted" for c in checks) or (
            settings.require_consensus and any(c.verdict != "supported" for c in checks)
        )
        # Segment replacement may already settle a disagreement; the other methods
        # only drop claims, so a disagreement goes to the judge.
        if rec.reached(merged) and (not disagree or opts.consensus == "replace"):
            break
        # The models disagree, or agree on something the detector still flags: judge.
        messages = _judge_messages(context, question, primary.answer, answers, merged_text, checks)
        try:
            raw = yield from ask_model(judge, messages, role="judge", options=opts)
        except LLMError as exc:
            return rec.failed("judge", exc)
        text = rec.usable("judge", raw, reference=primary.answer)
        if text is None:
            continue
        if _says_nothing(text, question):
            rec.record(
                "judge", None, error="output that states nothing the question does not", answer=raw
            )
            continue
        verdict = yield from assess(context, text)
        rec.record("judge", verdict, win_ties=True)
    return "max_iterations_reached", None


def _cross_check(
    rec: Recorder,
    context: Sequence[str],
    primary: Assessment,
    answers: Sequence[str],
    opts: MitigationOptions,
) -> Generator[Op, object, tuple[Assessment, str, list[ClaimCheck]]]:
    """Check the primary answer's claims against the verifiers' answers and merge them.

    Records the ``cross_check`` step.

    Returns:
        The merged answer's assessment, its text, and the claim checks.
    """
    weights = yield from _weights(context, answers, opts.consensus)
    pieces = sentences(primary.answer) or [(0, len(primary.answer), primary.answer)]
    claims = [text for _, _, text in pieces]
    labels = yield from _labels(claims, answers)
    checks = tally_claims(claims, labels, weights, method=opts.consensus)
    merged_text, checks = merge_claims(
        checks,
        flagged=_claim_flags(primary, pieces),
        answers=answers,
        labels=labels,
        weights=weights,
        method=opts.consensus,
    )
    merged = primary
    if merged_text != primary.answer:
        merged = yield from assess(context, merged_text)
    rec.record(
        "cross_check",
        merged if merged is not primary else None,
        answer=merged_text,
        claims=checks,
    )
    return merged, merged_text, checks
