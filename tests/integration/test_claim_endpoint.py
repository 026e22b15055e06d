"""The endpoint claim checker through the real OpenAI client, against the local server.

:class:`EndpointChecker` reads claims with a model behind an OpenAI-compatible server:
``minicheck`` (Document / Claim, Yes or No, P(supported) from the first token's
log-probabilities) or ``json`` (a judge's verdict and quote per claim). Every request
here crosses HTTP to :mod:`tests._openai_server`, which sends log-probabilities as
OpenAI, vLLM and llama.cpp do (``choices[0].logprobs.content[0].top_logprobs``).

What is pinned: the probabilities and labels read from real answers; every fault (the
server down, a timeout, 500 after the retries, 503 while loading, a claim over the
limit, no evidence, a reply that does not parse) leaves the claims it touches not
checked with a reason, never supported, on the sync and the async path alike; the
contract; the registry; and the engine's cascade (spans, not checked, withholding).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import socket
import threading
import time
from collections.abc import Callable

import pytest

from tests._fakes import QuestionWordClassifier, RuleNLI
from tests._openai_server import ChatRequest, OpenAIServer, Reply
from truthlens_integrations.core import InvalidArgumentError
from truthlens_integrations.core.engine import TruthLens
from truthlens_integrations.core.engine._verdict import REDACTED
from truthlens_integrations.core.llm import OpenAICompatibleLLM
from truthlens_integrations.core.models.claims import Claim, ClaimJudgement
from truthlens_integrations.core.models.claims._contract import acheck_claims, check_claims
from truthlens_integrations.core.models.claims._endpoint import EndpointChecker
from truthlens_integrations.core.models.claims._registry import load_checker
from truthlens_integrations.core.models.detection import load_detector

MODEL = "test-model"  # the session server serves two models: the checker names one
BUILT = "The Eiffel Tower was built from 1887 to 1889."
TALL = "The Eiffel Tower is 330 meters tall."
PARIS = "The Eiffel Tower stands in Paris."
CONTEXT = f"{BUILT} {TALL} {PARIS}"


def claim(text: str, evidence: str = CONTEXT) -> Claim:
    return Claim(text=text, start=0, end=len(text), evidence=evidence)


def minicheck(server: OpenAIServer, **options: object) -> EndpointChecker:
    options.setdefault("max_attempts", 1)
    return EndpointChecker(server.url, model=MODEL, **options)  # type: ignore[arg-type]


def judge(server: OpenAIServer, **options: object) -> EndpointChecker:
    options.setdefault("max_attempts", 1)
    return EndpointChecker(server.url, model=MODEL, protocol="json", **options)  # type: ignore[arg-type]


def verdicts(*rows: tuple[int, str, str | None]) -> str:
    """A judge's JSON reply: one row per (id, verdict, quote)."""
    return json.dumps(
        {"claims": [{"id": i, "verdict": v, "quote": q} for i, v, q in rows]}, ensure_ascii=False
    )


def listed_claims(request: ChatRequest) -> list[str]:
    """The claims a judge request lists (``1. ...`` lines after ``Claims:``)."""
    tail = request.last_user.split("\nClaims:\n", 1)[1]
    return [re.sub(r"^\d+\. ", "", line) for line in tail.splitlines()]


def document(request: ChatRequest) -> str:
    """The document a judge request sends."""
    return request.last_user.split("Document:\n", 1)[1].split("\n\nClaims:\n", 1)[0]


def assert_not_checked(judgements: list[ClaimJudgement], *reason: str) -> None:
    """Every judgement is not checked, no probability, no label, a reason with these words."""
    for j in judgements:
        assert j.checked is False
        assert j.supported is None and j.label is None and not j.rejected
        assert j.reason
        for part in reason:
            assert part in j.reason, j.reason


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- the server: log-probabilities as real servers send them ---------------------------


def test_the_server_sends_first_token_logprobs_only_when_asked(
    openai_server: OpenAIServer,
) -> None:
    alternatives = [(" Yes", -0.1), (" No", -2.3), (" Maybe", -4.0)]
    openai_server.script(Reply("Yes", logprobs=alternatives), Reply("Yes", logprobs=alternatives))
    llm = OpenAICompatibleLLM(MODEL, base_url=openai_server.url)
    assert llm.complete("q", top_logprobs=2).first_token_logprobs == {" Yes": -0.1, " No": -2.3}
    assert llm.complete("q").first_token_logprobs is None  # not asked: not sent
    asked, plain = openai_server.chat_requests()
    assert (asked.top_logprobs, asked.body["logprobs"]) == (2, True)
    assert plain.top_logprobs is None and "logprobs" not in plain.body


# -- minicheck: Yes / No -----------------------------------------------------------------


def test_minicheck_reads_p_supported_from_the_first_tokens_logprobs(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(Reply("Yes", logprobs=[(" Yes", -0.105), (" No", -2.3), (" The", -6.0)]))
    [found] = minicheck(openai_server).check([claim(BUILT, BUILT)])
    expected = math.exp(-0.105) / (math.exp(-0.105) + math.exp(-2.3))
    assert found.checked and found.label == "supported"
    assert found.supported == pytest.approx(expected)
    [sent] = openai_server.chat_requests()
    assert sent.body["max_tokens"] == 1 and sent.body["temperature"] == 0
    assert sent.top_logprobs == 10
    assert sent.last_user == f"Document: {BUILT}\nClaim: {BUILT}"


@pytest.mark.parametrize(
    ("alternatives", "yes", "no"),
    [
        (
            [("Yes", -1.0), (" yes", -1.5), ("YES", -3.0), (" No", -0.5), ("no", -2.0)],
            [-1.0, -1.5, -3.0],
            [-0.5, -2.0],
        ),
        ([("\tNo", -0.2), ("\nyes", -1.8), (" NO ", -2.5)], [-1.8], [-0.2, -2.5]),
        ([(" yes ", -0.3), (" Yesterday", -0.9), (" no", -1.2)], [-0.3], [-1.2]),
    ],
    ids=["case", "whitespace", "whole-word"],
)
def test_minicheck_sums_the_case_and_space_variants_of_yes_and_no(
    openai_server: OpenAIServer,
    alternatives: list[tuple[str, float]],
    yes: list[float],
    no: list[float],
) -> None:
    openai_server.script(Reply("x", logprobs=alternatives))
    [found] = minicheck(openai_server).check([claim(TALL)])
    p_yes, p_no = sum(map(math.exp, yes)), sum(map(math.exp, no))
    assert found.checked
    assert found.supported == pytest.approx(p_yes / (p_yes + p_no))


@pytest.mark.parametrize(
    ("reply", "supported", "label"),
    [
        (Reply("Yes"), 1.0, "supported"),
        (Reply("No."), 0.0, "neutral"),
        (Reply(" yes, it is"), 1.0, "supported"),
        # log-probabilities that name neither: the text decides
        (Reply("No", logprobs=[(" The", -0.2), (" It", -1.0)]), 0.0, "neutral"),
    ],
    ids=["yes", "no", "lower-case", "logprobs-without-yes-or-no"],
)
def test_minicheck_falls_back_to_the_text_without_logprobs(
    openai_server: OpenAIServer, reply: Reply, supported: float, label: str
) -> None:
    openai_server.script(reply)
    [found] = minicheck(openai_server).check([claim(TALL)])
    assert (found.checked, found.supported, found.label) == (True, supported, label)
    assert found.rejected is (supported < 0.5)


def test_minicheck_stops_asking_a_server_that_refuses_logprobs(openai_server: OpenAIServer) -> None:
    # llama.cpp's server without logits_all answers a logprobs request with a 500 whose
    # message says so: the checker asks again without, and from then on reads the word.
    refusal = "logprobs is not supported for models created with logits_all=False"
    openai_server.script(Reply(status=500, error=refusal), Reply("No"), Reply("Yes"))
    checker = minicheck(openai_server)
    first, second = checker.check([claim(TALL), claim(BUILT)])
    assert (first.supported, second.supported) == (0.0, 1.0)
    asked = [r.top_logprobs for r in openai_server.chat_requests()]
    assert asked == [10, None, None]
    assert checker.uses_logprobs is False


def test_minicheck_another_error_is_not_taken_for_a_refusal(openai_server: OpenAIServer) -> None:
    openai_server.script(Reply(status=500, error="out of memory"))
    checker = minicheck(openai_server)
    found = checker.check([claim(TALL)])
    assert_not_checked(found, "out of memory")
    assert checker.uses_logprobs is True


@pytest.mark.parametrize("text", ["Maybe", "The", "I cannot tell"])
def test_minicheck_an_answer_neither_yes_nor_no_is_not_checked(
    openai_server: OpenAIServer, text: str
) -> None:
    openai_server.script(Reply(text, logprobs=[(" Maybe", -0.1), (" Perhaps", -1.0)]))
    found = minicheck(openai_server).check([claim(TALL)])
    assert_not_checked(found, "not Yes or No")
    assert text in (found[0].reason or "")


# -- json: a judge's verdicts --------------------------------------------------------------


def test_json_maps_the_judges_verdicts_onto_labels(openai_server: OpenAIServer) -> None:
    claims = [claim(BUILT), claim("The Eiffel Tower was built in 1950."), claim("It is blue.")]
    openai_server.script(
        verdicts(
            (1, "supported", "built from 1887 to 1889"),
            (2, " Contradicted", "built from  1887 TO 1889"),  # case and spaces aside
            (3, "unsupported", None),
        )
    )
    found = judge(openai_server).check(claims)
    assert [(j.checked, j.label, j.supported) for j in found] == [
        (True, "supported", 1.0),
        (True, "contradiction", 0.0),
        (True, "neutral", 0.0),
    ]
    assert found[0].quote == "built from 1887 to 1889"
    assert [j.rejected for j in found] == [False, True, True]
    [sent] = openai_server.chat_requests()  # one call for the three
    assert listed_claims(sent) == [c.text for c in claims]
    assert document(sent) == CONTEXT  # the shared evidence once
    assert sent.body["temperature"] == 0 and sent.top_logprobs is None


@pytest.mark.parametrize(
    "quote",
    [None, "", "   ", "built in 1887", "The Eiffel Tower was built from 1887 to 1889. It is old."],
    ids=["none", "empty", "blank", "not-in-evidence", "runs-past-evidence"],
)
def test_json_a_supported_verdict_on_a_quote_not_in_the_evidence_is_not_checked(
    openai_server: OpenAIServer, quote: str | None
) -> None:
    openai_server.script(verdicts((1, "supported", quote)))
    found = judge(openai_server).check([claim(BUILT, BUILT)])
    assert_not_checked(found, "quote not in the evidence")


def test_json_a_quote_not_from_the_evidence_is_not_kept(openai_server: OpenAIServer) -> None:
    # The judge "quotes" the claim itself: that is no evidence, and must not read as it.
    wrong = "The Eiffel Tower was built in 1950."
    openai_server.script(
        verdicts((1, "contradicted", "built in 1950"), (2, "contradicted", "1887 to 1889"))
    )
    found = judge(openai_server).check([claim(wrong), claim(wrong)])
    assert [(j.label, j.quote) for j in found] == [
        ("contradiction", None),
        ("contradiction", "1887 to 1889"),
    ]


def test_json_a_claim_the_judge_skipped_or_judged_twice_is_not_checked(
    openai_server: OpenAIServer,
) -> None:
    openai_server.script(
        verdicts(
            (1, "supported", "330 meters tall"),
            (3, "supported", "stands in Paris"),
            (3, "contradicted", None),  # two different verdicts for claim 3
            (4, "unsupported", None),
            (4, "Unsupported", None),  # the same verdict twice is one verdict
            (7, "supported", "330 meters tall"),  # no such claim
        )
    )
    found = judge(openai_server).check(
        [claim(TALL), claim(BUILT), claim(PARIS), claim("It is blue.")]
    )
    assert (found[0].checked, found[0].label) == (True, "supported")
    assert_not_checked([found[1]], "no verdict")
    assert_not_checked([found[2]], "different verdicts")
    assert (found[3].checked, found[3].label) == (True, "neutral")


@pytest.mark.parametrize(
    "reply",
    [
        "All claims are supported.",
        '```json\n{"claims": [{"id": 1, "verdict": "supported"',  # cut off
        '{"verdicts": [{"id": 1, "verdict": "supported", "quote": "330 meters tall"}]}',
        '{"claims": {"id": 1, "verdict": "supported", "quote": "330 meters tall"}}',
        '[{"id": 1, "verdict": "supported", "quote": "330 meters tall"}]',
        '{"claims": [{"id": 1, "verdict": "supported", "quote": "330 meters tall", "x": NaN}]}',
    ],
    ids=["prose", "cut-off", "no-claims-key", "claims-not-a-list", "bare-list", "nan"],
)
def test_json_a_reply_that_is_not_the_json_asked_for_leaves_every_claim_not_checked(
    openai_server: OpenAIServer, reply: str
) -> None:
    openai_server.script(reply)
    found = judge(openai_server).check([claim(TALL), claim(BUILT)])
    assert_not_checked(found, "not the JSON asked for")


def test_json_a_fenced_reply_is_read(openai_server: OpenAIServer) -> None:
    body = verdicts((1, "supported", "330 meters tall"))
    openai_server.script(f"Here you are:\n```json\n{body}\n```")
    [found] = judge(openai_server).check([claim(TALL)])
    assert (found.checked, found.label) == (True, "supported")


def answer_by_claim(request: ChatRequest) -> str:
    """A judge that supports what the context says and contradicts the rest, by text."""
    rows = []
    for i, text in enumerate(listed_claims(request), 1):
        known = next((s for s in (BUILT, TALL, PARIS) if s == text), None)
        rows.append((i, "supported", known) if known else (i, "contradicted", None))
    return verdicts(*rows)


def test_json_claims_split_over_calls_land_on_their_own_claims(
    openai_server: OpenAIServer,
) -> None:
    texts = [BUILT, "It was built in 1950.", TALL, "It is 500 meters tall.", PARIS]
    openai_server.respond(answer_by_claim)
    found = judge(openai_server, claims_per_call=2).check([claim(t) for t in texts])
    assert [j.claim.text for j in found] == texts
    assert [j.label for j in found] == [
        "supported",
        "contradiction",
        "supported",
        "contradiction",
        "supported",
    ]
    assert [listed_claims(r) for r in openai_server.chat_requests()] == [
        texts[0:2],
        texts[2:4],
        texts[4:5],
    ]


def test_json_no_claim_is_judged_against_a_document_cut_before_its_evidence(
    openai_server: OpenAIServer,
) -> None:
    # Each claim has its own evidence; two of them joined are over the limit.
    claims = [claim(BUILT, BUILT), claim(TALL, TALL), claim(PARIS, PARIS)]
    openai_server.respond(answer_by_claim)
    checker = judge(openai_server, max_evidence_chars=len(BUILT) + len(TALL))
    found = checker.check(claims)
    assert [j.label for j in found] == ["supported"] * 3
    for request in openai_server.chat_requests():
        sent = document(request)
        assert len(sent) <= checker.max_evidence_chars
        for text in listed_claims(request):
            assert text in sent  # each claim's evidence is there, whole
    assert len(openai_server.chat_requests()) == 2


# -- faults: not checked, with the reason, never supported --------------------------------

Fault = Callable[[OpenAIServer], EndpointChecker]


def _down(server: OpenAIServer) -> EndpointChecker:
    return EndpointChecker(f"http://127.0.0.1:{free_port()}/v1", model=MODEL, max_attempts=2)


def _slow(server: OpenAIServer) -> EndpointChecker:
    server.respond(lambda request: Reply("Yes", delay_s=1.5))
    return EndpointChecker(server.url, model=MODEL, timeout=0.3, max_attempts=1)


def _error_500(server: OpenAIServer) -> EndpointChecker:
    server.respond(lambda request: Reply(status=500, error="internal error"))
    return EndpointChecker(server.url, model=MODEL, max_attempts=3)


def _loading_503(server: OpenAIServer) -> EndpointChecker:
    server.respond(lambda request: Reply(status=503, error="Loading model"))
    return EndpointChecker(server.url, model=MODEL, max_attempts=2)


FAULTS: dict[str, tuple[Fault, tuple[str, ...]]] = {
    "server-down": (_down, ("could not connect", "after 2 attempts")),
    "timeout": (_slow, ("did not answer within 0.3s",)),
    "http-500": (_error_500, ("500", "after 3 attempts", "internal error")),
    "http-503-loading": (_loading_503, ("503", "Loading model")),
}


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_server_fault_leaves_every_claim_not_checked(
    openai_server: OpenAIServer, fault: str, path: str
) -> None:
    build, reason = FAULTS[fault]
    checker = build(openai_server)
    claims = [claim(BUILT), claim(TALL)]
    if path == "sync":
        found = check_claims(checker, claims)
    else:
        found = asyncio.run(acheck_claims(checker, claims))
    assert_not_checked(found, "checker error", *reason)
    if fault == "http-500":  # the client's retries ran, per claim
        assert len(openai_server.chat_requests()) == 3 * len(claims)


@pytest.mark.parametrize("protocol", ["minicheck", "json"])
def test_a_claim_over_the_limit_or_without_evidence_is_not_checked_and_not_sent(
    openai_server: OpenAIServer, protocol: str
) -> None:
    long = "The Eiffel Tower " + "is very tall " * 20 + "indeed."
    blank = claim(PARIS, " \n\t ")
    openai_server.respond((lambda r: "Yes") if protocol == "minicheck" else answer_by_claim)
    checker = EndpointChecker(
        openai_server.url,
        model=MODEL,
        protocol=protocol,
        max_claim_chars=100,  # type: ignore[arg-type]
    )
    over, empty, fine = checker.check([claim(long), blank, claim(TALL)])
    assert_not_checked([over], "over the checker's limit of 100 characters")
    assert_not_checked([empty], "no evidence")
    assert (fine.checked, fine.label) == (True, "supported")
    requests = openai_server.chat_requests()
    if protocol == "minicheck":
        asked = [r.last_user.rsplit("Claim: ", 1)[1] for r in requests]
    else:
        asked = [text for r in requests for text in listed_claims(r)]
    assert asked == [TALL]  # only the claim that could be judged was sent


# -- the async path --------------------------------------------------------------------------


def mixed_script(request: ChatRequest) -> Reply | str:
    """Yes, No, Maybe or a 503, by the claim asked about: one of each outcome."""
    asked = request.last_user.rsplit("Claim: ", 1)[1]
    if "1950" in asked:
        return Reply("No", logprobs=[(" No", -0.05), (" Yes", -3.0)])
    if "blue" in asked:
        return "Maybe"
    if "500" in asked:
        return Reply(status=503, error="Loading model")
    return Reply("Yes", logprobs=[(" Yes", -0.2), (" No", -1.7)])


def test_acheck_judges_as_check_does(openai_server: OpenAIServer) -> None:
    claims = [
        claim(BUILT),
        claim("It was built in 1950."),
        claim("It is blue."),
        claim("It is 500 meters tall."),
        claim("x" * 300),
        claim(TALL, ""),
    ]
    openai_server.respond(mixed_script)
    checker = minicheck(openai_server, max_claim_chars=200)
    sync = check_claims(checker, claims)
    asynchronous = asyncio.run(acheck_claims(checker, claims))
    assert asynchronous == sync
    assert [j.checked for j in sync] == [True, True, False, False, False, False]
    assert sync[0].supported == pytest.approx(1 / (1 + math.exp(-1.5)))
    assert sync[1].rejected


def test_acheck_keeps_to_its_concurrency(openai_server: OpenAIServer) -> None:
    lock, now, most = threading.Lock(), [0], [0]

    def slow_yes(request: ChatRequest) -> str:
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        time.sleep(0.15)
        with lock:
            now[0] -= 1
        return "Yes"

    openai_server.respond(slow_yes)
    checker = minicheck(openai_server, concurrency=2)
    found = asyncio.run(acheck_claims(checker, [claim(f"{TALL} ({i})") for i in range(6)]))
    assert all(j.checked for j in found)
    assert most[0] == 2  # in parallel, never more than two


def test_the_async_path_works_from_one_event_loop_to_the_next(
    openai_server: OpenAIServer,
) -> None:
    # A client kept from a closed loop failed the next asyncio.run() (no retry here).
    openai_server.respond(lambda request: "Yes")
    checker = minicheck(openai_server, max_attempts=1)
    for _ in range(3):
        [found] = asyncio.run(acheck_claims(checker, [claim(TALL)]))
        assert found.checked, found.reason


# -- the contract, the options and the registry ----------------------------------------------


def test_the_contract_holds_for_every_outcome(openai_server: OpenAIServer) -> None:
    same = claim(BUILT)
    claims = [same, claim("It was built in 1950."), same, claim("It is blue."), claim(TALL, "")]
    openai_server.respond(mixed_script)
    found = check_claims(minicheck(openai_server), claims)
    assert [j.claim for j in found] == claims
    assert all(j.checker == "endpoint:minicheck" for j in found)
    for j in found:
        assert (j.supported is not None) is j.checked is (j.label is not None)
        assert j.checked or j.reason


@pytest.mark.parametrize(
    "options",
    [
        {"claims_per_call": 4},  # minicheck reads one claim per call
        {"timeout": 0},
        {"timeout": float("nan")},
        {"max_attempts": 0},
        {"max_attempts": 1.5},
        {"concurrency": True},
        {"protocol": "yaml"},
    ],
    ids=[
        "per-call-minicheck",
        "timeout-0",
        "timeout-nan",
        "attempts-0",
        "attempts-1.5",
        "concurrency-bool",
        "protocol",
    ],
)
def test_an_option_that_does_not_apply_or_is_out_of_range_is_refused(
    openai_server: OpenAIServer, options: dict[str, object]
) -> None:
    with pytest.raises(InvalidArgumentError):
        EndpointChecker(openai_server.url, model=MODEL, **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("option", [{"timeout": 5.0}, {"max_attempts": 2}, {"model": MODEL}])
def test_a_server_option_with_a_configured_client_is_refused(
    openai_server: OpenAIServer, option: dict[str, object]
) -> None:
    llm = OpenAICompatibleLLM(MODEL, base_url=openai_server.url)
    with pytest.raises(InvalidArgumentError, match=next(iter(option))):
        EndpointChecker(llm=llm, **option)  # type: ignore[arg-type]
    openai_server.script("Yes")
    [found] = EndpointChecker(llm=llm).check([claim(TALL)])
    assert found.checked


def test_load_checker_builds_an_endpoint_checker_for_a_url(openai_server: OpenAIServer) -> None:
    checker = load_checker(openai_server.url, protocol="json", model=MODEL, timeout_s=7.0)
    assert isinstance(checker, EndpointChecker)
    assert checker.protocol == "json" and checker.name == "endpoint:json"
    assert isinstance(checker.llm, OpenAICompatibleLLM) and checker.llm.timeout == 7.0
    openai_server.script(verdicts((1, "supported", "330 meters tall")))
    [found] = check_claims(checker, [claim(TALL)])
    assert (found.checked, found.label) == (True, "supported")
    assert openai_server.chat_requests()[0].body["model"] == MODEL


@pytest.mark.parametrize(
    ("checker", "options"),
    [
        ("url", {"supported_label": 1}),
        ("url", {"trust_remote_code": True}),
        ("bundled", {"protocol": "json"}),
        ("bundled", {"model": MODEL}),
        ("bundled", {"timeout_s": 3.0}),
    ],
)
def test_load_checker_refuses_options_that_do_not_apply(
    openai_server: OpenAIServer, checker: str, options: dict[str, object]
) -> None:
    name = openai_server.url if checker == "url" else checker
    with pytest.raises(InvalidArgumentError, match="does not apply"):
        load_checker(name, **options)  # type: ignore[arg-type]
    assert openai_server.requests == []


# -- the engine's cascade --------------------------------------------------------------------

#: The answer: the first claim is the context's, the second is not.
ANSWER = f"{BUILT} The tower is painted bright blue every single year."
QUESTION = "When was the Eiffel Tower built?"


def engine(server: OpenAIServer, **settings: object) -> TruthLens:
    claim_check = {"checker": server.url, "model": MODEL, "when": "always", **settings}
    policy: dict[str, object] = {"claim_check": claim_check}
    action = claim_check.pop("action", None)
    if action is not None:
        policy["hallucination_action"] = action
    return TruthLens.from_config(
        {"hallucination": policy},
        detector=load_detector("lexical"),
        nli=RuleNLI(),
        fact_checker=QuestionWordClassifier(),
    )


def test_engine_a_rejected_claim_becomes_a_span_with_the_checkers_label(
    openai_server: OpenAIServer,
) -> None:
    guard = engine(openai_server, protocol="json", weight=3.0)
    openai_server.respond(
        lambda r: verdicts((1, "supported", "built from 1887 to 1889"), (2, "contradicted", None))
    )
    # An answer the lexical detector passes: every word is in the context.
    answer = f"{BUILT} The Eiffel Tower is 330 meters tall in Paris."
    verdict = guard.guard(context=CONTEXT, question=QUESTION, answer=answer)
    assert verdict.checked and verdict.detected
    report = verdict.claim_check
    assert report is not None and report.detector_score is not None
    assert report.score == verdict.score and verdict.score > report.detector_score
    [span] = verdict.spans
    assert span.text == answer[len(BUILT) + 1 :] and span.nli_label == "contradiction"
    shown = verdict.to_dict()["claim_check"]
    assert [j["claim"]["text"] for j in shown["judgements"]] == [BUILT, span.text]
    assert [j["label"] for j in shown["judgements"]] == ["supported", "contradiction"]


@pytest.mark.parametrize("fault", ["http-503-loading", "server-down", "maybe"])
def test_engine_a_checker_fault_makes_an_unflagged_answer_not_checked(
    openai_server: OpenAIServer, fault: str
) -> None:
    if fault == "http-503-loading":
        openai_server.respond(lambda request: Reply(status=503, error="Loading model"))
        guard = engine(openai_server)
    elif fault == "server-down":
        guard = engine(openai_server, checker=f"http://127.0.0.1:{free_port()}/v1")
    else:
        openai_server.respond(lambda r: "Yes" if r.last_user.endswith(BUILT) else "Maybe")
        guard = engine(openai_server)
    answer = f"{BUILT} The Eiffel Tower is 330 meters tall in Paris."
    verdict = guard.guard(context=CONTEXT, question=QUESTION, answer=answer)
    assert verdict.checked is False
    assert verdict.not_checked_reason == "unverifiable"
    assert verdict.score is None and verdict.detected is None
    shown = verdict.to_dict()
    assert shown["checked"] is False and shown["score"] is None
    judgements = shown["claim_check"]["judgements"]
    assert len(judgements) == 2 and any(not j["checked"] and j["reason"] for j in judgements)
    assert shown["claim_check"]["score"] is None


def test_engine_a_blocked_verdict_withholds_the_claims(openai_server: OpenAIServer) -> None:
    guard = engine(openai_server, weight=3.0, action="block")
    rejected = "The Eiffel Tower is 330 meters tall in Paris."
    # Claim 1 is rejected; the server answers claim 2 by echoing it (a server that
    # ignores max_tokens): the reason quoting that answer must not leak it either.
    echoed = "The tower opened in 1889."
    openai_server.respond(lambda r: "No" if rejected in r.last_user else f"Claim: {echoed}")
    answer = f"{rejected} {echoed}"
    verdict = guard.guard(context=CONTEXT, question=QUESTION, answer=answer)
    assert verdict.blocked
    shown = json.dumps(verdict.to_dict())
    assert rejected not in shown and echoed not in shown
    report = verdict.to_dict()["claim_check"]
    assert [j["claim"]["text"] for j in report["judgements"]] == [REDACTED, REDACTED]
    full = verdict.full().claim_check
    assert full is not None
    assert [j.claim.text for j in full.judgements] == [rejected, echoed]
    assert echoed in (full.judgements[1].reason or "")


class EchoingChecker:
    """A plug-in checker that rejects every claim, "quoting" the claim itself."""

    name = "echoing"

    def check(self, claims: list[Claim]) -> list[ClaimJudgement]:
        return [
            ClaimJudgement(
                claim=c,
                checker=self.name,
                checked=True,
                supported=0.0,
                label="contradiction",
                quote=c.text,
            )
            for c in claims
        ]


def test_engine_a_blocked_verdict_withholds_a_plugin_checkers_quote_of_the_claim() -> None:
    guard = TruthLens.from_config(
        {
            "hallucination": {
                "hallucination_action": "block",
                "claim_check": {"when": "always", "weight": 3.0},
            }
        },
        detector=load_detector("lexical"),
        nli=RuleNLI(),
        fact_checker=QuestionWordClassifier(),
        claim_checker=EchoingChecker(),
    )
    rejected = "The Eiffel Tower is 330 meters tall in Paris."
    verdict = guard.guard(context=CONTEXT, question=QUESTION, answer=rejected)
    assert verdict.blocked
    assert rejected not in json.dumps(verdict.to_dict())
    full = verdict.full().claim_check
    assert full is not None and full.judgements[0].quote == rejected
