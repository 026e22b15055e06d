"""A claim checker behind an OpenAI-compatible endpoint: a MiniCheck model or an LLM judge.

Two protocols:

- ``minicheck``: one call per claim, ``Document: ... Claim: ...`` answered Yes or No (the
  prompt Bespoke-MiniCheck was trained on; Ollama and vLLM serve it). P(supported) is
  P(Yes) / (P(Yes) + P(No)) from the first token's log-probabilities where the server
  gives them, else 1 or 0 by the answer's first word.
- ``json``: one call for a few claims at once, as many as fit ``claims_per_call`` and,
  their evidence joined, ``max_evidence_chars`` (a claim is never judged against a
  document cut short of its own evidence, unless that alone is over the limit); the
  judge answers in JSON with a verdict per claim and the quote it rests on. A
  ``supported`` verdict whose quote is not in the evidence is not taken, two different
  verdicts for one claim are not taken either, and a quote that is not in the evidence
  is not kept as one.

Whatever goes wrong (the server is down, a timeout, an HTTP error after the client's
retries, an answer that is neither Yes nor No, JSON that does not parse, a claim the judge
skipped, a claim over the limit) makes the claims of that call *not checked*, with the
reason; none reads as supported.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..._errors import InvalidArgumentError
from ..._json import JSONFormatError, loads_strict
from ..._quoting import quoted
from ...llm import LLM, LLMResponse
from ._contract import Claim, ClaimJudgement, judged, not_checked

if TYPE_CHECKING:
    from ...llm import OpenAICompatibleLLM

__all__ = ["EndpointChecker", "Protocol"]

Protocol = Literal["minicheck", "json"]

_MINICHECK_SYSTEM = (
    "Determine whether the claim is supported by the document. Answer Yes or No only."
)
_JUDGE_SYSTEM = (
    "You check claims against a document. For each numbered claim, decide whether the "
    "document supports it, contradicts it, or does neither. Reply with JSON only, in this "
    'form: {"claims": [{"id": 1, "verdict": "supported" | "contradicted" | "unsupported", '
    '"quote": "the words of the document the verdict rests on"}]}'
)
_DEFAULT_TIMEOUT = 30.0
_DEFAULT_ATTEMPTS = 3
_DEFAULT_PER_CALL = 8
_VERDICTS = {"supported": "supported", "contradicted": "contradiction", "unsupported": "neutral"}
_FIRST_WORD = re.compile(r"[A-Za-z]+")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class _Call:
    """One request: the claims it judges and its messages."""

    claims: list[Claim]
    messages: list[dict[str, str]]


class EndpointChecker:
    """Checks claims with a model behind an OpenAI-compatible endpoint.

    Example:
        >>> checker = EndpointChecker(  # doctest: +SKIP
        ...     "http://localhost:11434/v1", model="bespoke-minicheck"
        ... )

    Args:
        base_url: The server (``http://host:port/v1``); ``None`` with ``llm``.
        model: The model to ask; ``None``: the server's only model.
        protocol: ``"minicheck"`` (Yes / No per claim) or ``"json"`` (a judge's verdicts).
        llm: A configured client instead of ``base_url`` (an
            :class:`~truthlens_integrations.core.llm.OpenAICompatibleLLM`, or any core
            LLM; only an OpenAI-compatible one gives log-probabilities).
        api_key: The server's key; default ``$OPENAI_API_KEY`` (none needed locally).
        timeout: Seconds one attempt may take (default 30; with ``base_url``).
        max_attempts: Attempts per call, transient errors only retried (default 3; with
            ``base_url``).
        max_claim_chars: A longer claim is not checked.
        max_evidence_chars: The most evidence one call sends (a claim's own evidence is
            cut to it).
        claims_per_call: Claims one ``json`` call judges at most (default 8; ``json``
            only: ``minicheck`` reads one claim per call).
        concurrency: Calls in flight at once on the async path.
        name: What verdicts call this checker.
        evidence_sentences: Context sentences read per claim. A model in this process
            reads more: claims with the same document share its evaluated prefix.

    Raises:
        InvalidArgumentError: For ``llm`` with a server option (``base_url``, ``model``,
            ``api_key``, ``timeout``, ``max_attempts``), ``claims_per_call`` with
            ``minicheck``, or a number out of range.
    """

    def __init__(
        self,
        base_url: str | None = None,
        *,
        model: str | None = None,
        protocol: Protocol = "minicheck",
        llm: LLM | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_attempts: int | None = None,
        max_claim_chars: int = 2_000,
        max_evidence_chars: int = 12_000,
        claims_per_call: int | None = None,
        concurrency: int = 4,
        name: str | None = None,
        evidence_sentences: int = 8,
    ) -> None:
        _refuse_misfits(
            protocol, claims_per_call, llm, base_url, model, api_key, timeout, max_attempts
        )
        per_call = _DEFAULT_PER_CALL if claims_per_call is None else claims_per_call
        attempts = _DEFAULT_ATTEMPTS if max_attempts is None else max_attempts
        for label, value in (
            ("max_claim_chars", max_claim_chars),
            ("max_evidence_chars", max_evidence_chars),
            ("claims_per_call", per_call),
            ("concurrency", concurrency),
            ("max_attempts", attempts),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(
                    f"EndpointChecker: {label} must be a positive whole number, got {value!r}"
                )
        seconds = _DEFAULT_TIMEOUT if timeout is None else timeout
        if not _positive(seconds):
            raise InvalidArgumentError(
                f"EndpointChecker: timeout must be a positive number of seconds, got {timeout!r}"
            )
        self.protocol: Protocol = protocol
        self.llm = (
            llm if llm is not None else _client(base_url, model, api_key, float(seconds), attempts)
        )
        self.max_claim_chars = max_claim_chars
        self.max_evidence_chars = max_evidence_chars
        self.claims_per_call = per_call if protocol == "json" else 1
        self.concurrency = concurrency
        self.name = name or f"endpoint:{protocol}"
        self.evidence_sentences = evidence_sentences
        # Asked for until the server refuses them (llama.cpp's server without
        # logits_all does, with an error); then the answer's first word is read.
        self.uses_logprobs = protocol == "minicheck" and _gives_logprobs(self.llm)

    # -- the one implementation: plan calls, read answers ------------------------------

    def check(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        """One judgement per claim, the calls one after another."""
        return self._judge(claims, [self._run(call) for call in self._plan(claims)])

    async def acheck(self, claims: Sequence[Claim]) -> list[ClaimJudgement]:
        """One judgement per claim, up to ``concurrency`` calls at once."""
        calls = self._plan(claims)
        gate = asyncio.Semaphore(self.concurrency)

        async def run(call: _Call) -> list[ClaimJudgement]:
            async with gate:
                return await self._arun(call)

        return self._judge(claims, list(await asyncio.gather(*(run(c) for c in calls))))

    def _plan(self, claims: Sequence[Claim]) -> list[_Call]:
        fit = [c for c in claims if len(c.text) <= self.max_claim_chars and c.evidence.strip()]
        groups = _packed(fit, self.claims_per_call, self.max_evidence_chars)
        return [_Call(group, self._messages(group)) for group in groups]

    def _judge(
        self, claims: Sequence[Claim], answered: list[list[ClaimJudgement]]
    ) -> list[ClaimJudgement]:
        found = {id(j.claim): j for judgements in answered for j in judgements}
        return [found.get(id(c)) or self._unplanned(c) for c in claims]

    def _unplanned(self, claim: Claim) -> ClaimJudgement:
        if not claim.evidence.strip():
            return not_checked(claim, self.name, "no evidence in the context")
        return not_checked(
            claim, self.name, f"claim over the checker's limit of {self.max_claim_chars} characters"
        )

    def _run(self, call: _Call) -> list[ClaimJudgement]:
        try:
            response = self._complete(call)
        except Exception as exc:  # noqa: BLE001 - any fault: not checked, with the reason
            if self._stop_logprobs(exc):
                return self._run(call)
            return self._failed(call, exc)
        return self._read(call, response)

    async def _arun(self, call: _Call) -> list[ClaimJudgement]:
        try:
            response = await self._acomplete(call)
        except Exception as exc:  # noqa: BLE001 - any fault: not checked, with the reason
            if self._stop_logprobs(exc):
                return await self._arun(call)
            return self._failed(call, exc)
        return self._read(call, response)

    def _stop_logprobs(self, exc: Exception) -> bool:
        """Whether ``exc`` is the server refusing log-probabilities: then stop asking."""
        if not self.uses_logprobs or "logprobs" not in str(exc).lower():
            return False
        self.uses_logprobs = False
        return True

    def _failed(self, call: _Call, exc: Exception) -> list[ClaimJudgement]:
        reason = f"checker error: {quoted(exc, limit=200)}"
        return [not_checked(c, self.name, reason) for c in call.claims]

    # -- requests -------------------------------------------------------------------------

    def _messages(self, claims: list[Claim]) -> list[dict[str, str]]:
        if self.protocol == "minicheck":
            claim = claims[0]
            document = claim.evidence[: self.max_evidence_chars]
            return [
                {"role": "system", "content": _MINICHECK_SYSTEM},
                {"role": "user", "content": f"Document: {document}\nClaim: {claim.text}"},
            ]
        document = _joined_evidence(claims)[: self.max_evidence_chars]
        listed = "\n".join(f"{i}. {c.text}" for i, c in enumerate(claims, 1))
        return [
            {"role": "system", "content": _JUDGE_SYSTEM},
            {"role": "user", "content": f"Document:\n{document}\n\nClaims:\n{listed}"},
        ]

    def _options(self) -> dict[str, Any]:
        if self.protocol == "minicheck":
            options: dict[str, Any] = {"max_tokens": 1, "temperature": 0.0}
            if self.uses_logprobs:
                options["top_logprobs"] = 10
            return options
        return {"max_tokens": 120 * self.claims_per_call, "temperature": 0.0}

    def _complete(self, call: _Call) -> LLMResponse:
        return self.llm.complete(call.messages, **self._options())  # type: ignore[arg-type]

    def _acomplete(self, call: _Call) -> Awaitable[LLMResponse]:
        return self.llm.acomplete(call.messages, **self._options())  # type: ignore[arg-type]

    # -- answers --------------------------------------------------------------------------

    def _read(self, call: _Call, response: LLMResponse) -> list[ClaimJudgement]:
        if self.protocol == "minicheck":
            return [self._yes_no(call.claims[0], response)]
        return self._verdicts(call.claims, response.text)

    def _yes_no(self, claim: Claim, response: LLMResponse) -> ClaimJudgement:
        p = _p_yes(response.first_token_logprobs)
        if p is None:
            word = _FIRST_WORD.search(response.text)
            answer = word.group(0).lower() if word else ""
            if answer not in ("yes", "no"):
                return not_checked(
                    claim,
                    self.name,
                    f"the checker answered {quoted(response.text, limit=60)}, not Yes or No",
                )
            p = 1.0 if answer == "yes" else 0.0
        return judged(claim, self.name, p)

    def _verdicts(self, claims: list[Claim], text: str) -> list[ClaimJudgement]:
        rows = _json_rows(text)
        if rows is None:
            reason = f"the judge's reply is not the JSON asked for: {quoted(text, limit=80)}"
            return [not_checked(c, self.name, reason) for c in claims]
        out = []
        for i, claim in enumerate(claims, 1):
            found = rows.get(i, [])
            if not found:
                out.append(not_checked(claim, self.name, "the judge gave no verdict for it"))
            elif len({_verdict_word(row) for row in found}) > 1:
                out.append(not_checked(claim, self.name, "the judge gave it different verdicts"))
            else:
                out.append(self._verdict(claim, found[0]))
        return out

    def _verdict(self, claim: Claim, row: dict[str, Any]) -> ClaimJudgement:
        verdict = _verdict_word(row)
        label = _VERDICTS.get(verdict)
        quote = row.get("quote") if isinstance(row.get("quote"), str) else None
        if not _quoted_from(quote, claim.evidence):
            # The quote field holds the evidence a verdict rests on: words the judge
            # did not take from it (the claim's own, say) are no quote.
            quote = None
        if label is None:
            return not_checked(
                claim,
                self.name,
                f"the judge's verdict {quoted(verdict, limit=40)} is not one asked for",
            )
        if label == "supported" and quote is None:
            return not_checked(
                claim, self.name, "the judge called it supported on a quote not in the evidence"
            )
        p = 1.0 if label == "supported" else 0.0
        return judged(claim, self.name, p, label=label, quote=quote)  # type: ignore[arg-type]


def _client(
    base_url: str | None, model: str | None, api_key: str | None, timeout: float, attempts: int
) -> OpenAICompatibleLLM:
    from ...llm import OpenAICompatibleLLM

    if base_url is None:
        raise InvalidArgumentError(
            "EndpointChecker needs base_url= (an OpenAI-compatible server, e.g. "
            "'http://localhost:11434/v1') or llm= (a configured client)"
        )
    return OpenAICompatibleLLM(
        model, base_url=base_url, api_key=api_key, timeout=timeout, max_attempts=attempts
    )


def _refuse_misfits(
    protocol: str,
    claims_per_call: int | None,
    llm: LLM | None,
    base_url: str | None,
    model: str | None,
    api_key: str | None,
    timeout: float | None,
    max_attempts: int | None,
) -> None:
    """Refuse an unknown protocol and the options that do not apply (never ignore one)."""
    if protocol not in ("minicheck", "json"):
        raise InvalidArgumentError(
            f"EndpointChecker: protocol must be 'minicheck' or 'json', got {protocol!r}"
        )
    if protocol == "minicheck" and claims_per_call is not None:
        raise InvalidArgumentError(
            "EndpointChecker: claims_per_call applies to protocol 'json'; "
            "'minicheck' reads one claim per call"
        )
    server = {
        "base_url": base_url,
        "model": model,
        "api_key": api_key,
        "timeout": timeout,
        "max_attempts": max_attempts,
    }
    given = [name for name, value in server.items() if value is not None]
    if llm is not None and given:
        # A configured client has its own server, model, key, timeout and retries.
        raise InvalidArgumentError(
            f"EndpointChecker: {', '.join(given)} does not apply with llm= (the client "
            "has its own); pass either llm= or the server's options"
        )


def _positive(value: object) -> bool:
    """Whether ``value`` is a finite number above zero (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value > 0


def _packed(claims: list[Claim], per_call: int, max_chars: int) -> list[list[Claim]]:
    """The claims in order, in groups of at most ``per_call`` whose evidence fits ``max_chars``.

    A group's calls send its claims' evidence joined (:func:`_joined_evidence`); a claim
    whose evidence would not fit starts the next group, so that no claim is read against
    a document cut before its own evidence. A claim whose evidence alone is over the
    limit goes alone, its evidence cut.
    """
    groups: list[list[Claim]] = []
    group: list[Claim] = []
    for claim in claims:
        if group and (len(group) >= per_call or len(_joined_evidence([*group, claim])) > max_chars):
            groups.append(group)
            group = []
        group.append(claim)
    if group:
        groups.append(group)
    return groups


def _gives_logprobs(llm: object) -> bool:
    return getattr(llm, "gives_logprobs", False) is True


def _p_yes(logprobs: dict[str, float] | None) -> float | None:
    """P(Yes) / (P(Yes) + P(No)) over the first token's alternatives; ``None`` if neither."""
    if not logprobs:
        return None
    yes = no = 0.0
    for token, logprob in logprobs.items():
        word = token.strip().lower()
        if word == "yes":
            yes += math.exp(logprob)
        elif word == "no":
            no += math.exp(logprob)
    if yes + no <= 0.0:
        return None
    return yes / (yes + no)


def _joined_evidence(claims: list[Claim]) -> str:
    """The claims' evidence, each text once, in order."""
    return "\n".join(dict.fromkeys(c.evidence for c in claims))


def _json_rows(text: str) -> dict[int, list[dict[str, Any]]] | None:
    """The judge's rows by claim number, or ``None`` when the reply is not that JSON."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = loads_strict(text[start : end + 1])
    except JSONFormatError:
        return None
    rows = data.get("claims") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        return None
    out: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        number = row.get("id") if isinstance(row, dict) else None
        if isinstance(number, int) and not isinstance(number, bool):
            out.setdefault(number, []).append(row)
    return out


def _verdict_word(row: dict[str, Any]) -> str:
    return str(row.get("verdict", "")).strip().lower()


def _quoted_from(quote: str | None, evidence: str) -> bool:
    """Whether ``quote`` stands in ``evidence`` (white space and case aside)."""
    if not quote or not quote.strip():
        return False
    return _folded(quote) in _folded(evidence)


def _folded(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()
