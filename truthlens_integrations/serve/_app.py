"""The guard pipeline as a Ray Serve application.

One deployment, :class:`TruthLensService`, loads the prompt classifier, the detector and
the NLI explainer once per replica (whatever the policy's ``load_detector`` returns) and
answers, through a FastAPI ingress:

* ``GET /healthz``: ready, with the detector's id and settings;
* ``POST /v1/detect``: ``{"context", "question", "answer"}`` gives one
  ``DetectionResult``; ``{"inputs": [...]}`` gives ``{"results": [...]}``;
* ``POST /v1/guard``: the same shapes give ``Verdict`` JSON (``{"verdicts": [...]}``);
  a single verdict also comes back with its ``x-truthlens-*`` / ``x-vsr-*`` headers;
* ``POST /v1/nli`` and ``POST /v1/classify``: the engine's other two models, used by
  clients whose policy points at the service.

Concurrent requests are merged into model batches with ``@serve.batch`` (one padded
forward pass for many answers). Bodies above ``service.max_request_bytes`` get 413,
more than ``service.max_inputs`` answers 413, text over the character limits
(``service.max_answer_chars`` and the others, counted as the model reads the text, after
normalisation, before any model runs) 413, a request whose text is more than
``service.max_request_tokens`` model tokens in all (every endpoint) 413;
bad JSON (not UTF-8, duplicate keys, deep nesting, huge numbers, lone surrogates) 400,
bad fields 422. A request's answers reach the models in chunks of at most
``max_answer_chars`` characters, and requests of more than a quarter of the token
budget run one at a time, so a large request cannot hold the replica while smaller ones
wait. Under ``block`` (or with ``redact``) a ``/v1/guard`` verdict carries
no hallucinated text: the blocked answer and the span texts stay in the replica. Request
counts, latencies and batch sizes are Ray metrics (``truthlens_serve_*``), exported
with Ray Serve's own on every node's metrics port for Prometheus.
"""

# No `from __future__ import annotations`: FastAPI reads the endpoints' annotations
# (`request: Request`) at runtime, and Serve's ingress wrapper cannot resolve strings.

import asyncio
import contextlib
import dataclasses
import gc
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Unpack
from urllib.parse import quote

from truthlens_integrations.core._adapter_api import ServiceKwargs, require

require("ray.serve", extra="serve", feature="truthlens serve")
require("fastapi", extra="serve", feature="truthlens serve")

from fastapi import FastAPI, Request  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402
from pydantic import BaseModel, ConfigDict, StrictBool, ValidationError  # noqa: E402
from ray import serve  # noqa: E402
from ray.serve import Application  # noqa: E402
from ray.util import metrics as ray_metrics  # noqa: E402

from truthlens_integrations.core import (  # noqa: E402
    DetectionInput,
    DetectionResult,
    InputTooLargeError,
    InvalidInputError,
    JSONFormatError,
    TruthLensError,
)
from truthlens_integrations.core._adapter_api import (  # noqa: E402
    at_most_one_token_per_char,
    check_input_sizes,
    check_request_tokens,
    loads_strict,
    readable_chars,
    redact_verdict,
    verdict_headers,
)
from truthlens_integrations.core.engine import TruthLens, Verdict  # noqa: E402
from truthlens_integrations.core.policy import Policy, PolicySource, load_policy  # noqa: E402

from ._policy import resolved_policy  # noqa: E402

__all__ = ["APP_NAME", "TruthLensService", "build_app", "deployment_options", "service_app"]

logger = logging.getLogger(__name__)

APP_NAME = "truthlens"

api = FastAPI(title="TruthLens guard service", docs_url=None, redoc_url=None)


class _Item(BaseModel):
    model_config = ConfigDict(extra="forbid")

    context: str | list[str] | None = None
    question: str | None = None
    answer: str


class _Batch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    inputs: list[_Item]


class _GuardItem(_Item):
    redact: StrictBool = False


class _GuardBatch(_Batch):
    redact: StrictBool = False


class _Pairs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pairs: list[tuple[str, str]]


class _Prompts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompts: list[str]


class _HTTPError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _headers(metadata: dict[str, str]) -> dict[str, str]:
    """The verdict's headers; span texts outside latin-1 are percent-encoded (RFC 9110)."""
    return {key: _latin1(value) for key, value in metadata.items()}


def _latin1(value: str) -> str:
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return quote(value, safe=" ;-,.:/")
    return value


def _error(status: int, exc: BaseException) -> JSONResponse:
    body: dict[str, Any] = {"error": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, InputTooLargeError):
        body.update(limit=exc.limit, size=exc.size)
    return JSONResponse(body, status_code=status)


# The helpers the deployment class calls are defined above it: @serve.deployment pickles
# the class, with the module globals it names, as soon as it is decorated.


def _check_text(text: str, what: str, limit: int) -> None:
    """Text a model may read: at most ``limit`` characters as it reads them, UTF-8 encodable."""
    size = readable_chars(text)
    if size > limit:
        raise InputTooLargeError(
            f"{what}: {size:,} characters as the model reads them (after normalisation); "
            f"the limit is {limit:,}",
            limit=limit,
            size=size,
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(f"{what} is not valid Unicode text (a lone surrogate)") from None


def _token_counter(detector: Any) -> Callable[[str], int]:
    """Tokens of one text by the detector's own tokenizer, or at most one per character.

    The detector's tokenizer is what most of a request's text goes through; the NLI
    model and the prompt classifier share the bundled detector's vocabulary. A detector
    without one (lexical, remote) is counted by characters, an upper bound.
    """
    loaded = getattr(detector, "_loaded", None)
    tokenizer = getattr(loaded, "tokenizer", None)
    lock = getattr(loaded, "tokenizer_lock", None)
    if tokenizer is None or lock is None:
        return at_most_one_token_per_char

    def count(text: str) -> int:
        with lock:  # fast tokenizers are not safe to call from several threads at once
            encoded = tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)
        return len(encoded["input_ids"])

    return count


def _request_texts(inputs: list[DetectionInput]) -> list[str]:
    """Every text of a detect or guard request the models read, answers first."""
    texts = [item.answer for item in inputs]
    texts += [item.question or "" for item in inputs]
    texts += [passage for item in inputs for passage in item.context]
    return texts


def _withheld(verdict: Verdict, *, redact: bool) -> Verdict:
    """The verdict a caller may see: without hallucinated text when blocked or asked.

    Idempotent: a verdict the engine already redacted is returned as it is.
    """
    if verdict.redacted or not (redact or verdict.blocked):
        return verdict
    return redact_verdict(verdict, verdict_headers(verdict, include_details=False))


#: A request of more than this share of ``max_request_tokens`` is large: one large
#: request runs at a time per replica, and small ones never wait for that lane.
_LARGE_SHARE = 0.25

#: Addresses that mean "this machine only".
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def _bind_replica_grpc_to_loopback(host: str) -> None:
    """Keep the replica's own gRPC server on loopback when the service is local-only.

    Ray Serve starts an inter-deployment gRPC server in every replica on ``[::]:0``
    (all interfaces), whatever HTTP host the service was given. It is started after
    this replica's ``__init__``, so rewriting the address here is in time. Only the
    wildcard is rewritten, and only for a loopback service.
    """
    if host not in _LOOPBACK_HOSTS:
        return
    try:
        from ray.serve._private import replica as ray_replica
    except ImportError:  # a Ray without this module: nothing to rewrite
        return
    original = getattr(ray_replica, "add_port_to_grpc_server", None)
    if original is None or getattr(original, "_truthlens_loopback", False):
        return

    def loopback_only(server: Any, address: str) -> Any:
        if address.startswith("[::]:"):
            address = "127.0.0.1:" + address.rsplit(":", 1)[1]
        return original(server, address)

    loopback_only._truthlens_loopback = True  # type: ignore[attr-defined]
    # setattr: the name is private to Ray (and not exported for the type checker).
    setattr(ray_replica, "add_port_to_grpc_server", loopback_only)  # noqa: B010


class _Metrics:
    """The service's Ray metrics, aggregated per node by Ray's metrics agent."""

    def __init__(self) -> None:
        self.requests = ray_metrics.Counter(
            "truthlens_serve_requests",
            description="Requests handled, by endpoint and HTTP status.",
            tag_keys=("endpoint", "status"),
        )
        self.latency = ray_metrics.Histogram(
            "truthlens_serve_request_seconds",
            description="Time to answer a request, by endpoint.",
            boundaries=[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0],
            tag_keys=("endpoint",),
        )
        self.batch = ray_metrics.Histogram(
            "truthlens_serve_batch_size",
            description="Answers per model batch (dynamic batching), by stage.",
            boundaries=[1, 2, 4, 8, 16, 32, 64, 128],
            tag_keys=("stage",),
        )
        self.answers = ray_metrics.Counter(
            "truthlens_serve_answers",
            description="Answers checked, by detection status.",
            tag_keys=("status",),
        )


@serve.deployment(name="TruthLensService")
@serve.ingress(api)
class TruthLensService:
    """One replica: the policy's models, loaded once, behind HTTP.

    Args:
        policy: The policy (dict or YAML text); its ``service`` block sets the limits
            and batching. Its ``service.url`` is ignored here: a replica runs the
            models itself.
    """

    def __init__(self, policy: dict[str, Any] | str | None = None) -> None:
        loaded = load_policy(policy)
        # The replica must not call itself: drop the client URL it may carry.
        service = loaded.service.model_copy(update={"url": None})
        local = loaded.model_copy(update={"service": service})
        self.settings = local.service
        self.limits = self.settings.input_limits()
        _bind_replica_grpc_to_loopback(self.settings.host)
        self.engine = TruthLens(local)
        # Load every model now, so a replica is only ready once it can answer.
        self.detector = self.engine.detector
        self.explainer = self.engine.nli
        self.classifier = self.engine.fact_checker
        self.count_tokens = _token_counter(self.detector)
        # Large requests take turns; small ones run beside them (see ``_admit``).
        self.large_lane = asyncio.Semaphore(1)
        self.batching = self.settings.max_batch_size > 1
        batched: Any
        for batched in (self._detect_one, self._guard_one):
            batched.set_max_batch_size(self.settings.max_batch_size)
            batched.set_batch_wait_timeout_s(self.settings.batch_wait_timeout_s)
        self.metrics = _Metrics()
        # The models and libraries just loaded are hundreds of thousands of objects that
        # live as long as the replica. Python's full collections walk them all (200-270 ms
        # measured beside an 8k-token request); frozen, they are skipped, and the p99
        # latency loses those pauses.
        gc.freeze()

    # -- endpoints ----------------------------------------------------------------------

    @api.get("/healthz")
    async def healthz(self) -> dict[str, Any]:
        """Ready: the detector's id and settings (clients check their thresholds)."""
        return {
            "status": "ok",
            "model_id": self.detector.model_id,
            "config": self.detector.config.model_dump(mode="json"),
            "nli_model_id": getattr(self.explainer, "model_id", None),
            "classifier_model_id": getattr(self.classifier, "model_id", None),
            "batching": self.batching,
            "max_batch_size": self.settings.max_batch_size,
            # Clients split their batches to fit (a request over them gets 413).
            "limits": {
                "max_inputs": self.settings.max_inputs,
                **dataclasses.asdict(self.limits),
            },
        }

    @api.post("/v1/detect")
    async def detect(self, request: Request) -> Any:
        """Detect hallucinated spans; one input or ``{"inputs": [...]}``."""
        return await self._handle("detect", request, self._detect)

    @api.post("/v1/guard")
    async def guard(self, request: Request) -> Any:
        """Run the guard pipeline (lightweight: no mitigation LLM on the service)."""
        return await self._handle("guard", request, self._guard)

    @api.post("/v1/nli")
    async def nli(self, request: Request) -> Any:
        """NLI labels of ``{"pairs": [[premise, hypothesis], ...]}``."""
        return await self._handle("nli", request, self._nli)

    @api.post("/v1/classify")
    async def classify(self, request: Request) -> Any:
        """Fact-check decisions of ``{"prompts": [...]}``."""
        return await self._handle("classify", request, self._classify)

    # -- request handling ---------------------------------------------------------------

    async def _handle(
        self, endpoint: str, request: Request, work: Callable[[Any], Awaitable[Any]]
    ) -> Any:
        started = time.perf_counter()
        status = 200
        try:
            body = loads_strict(await self._body(request))
            response = await work(body)
        except _HTTPError as exc:
            status, response = exc.status, _error(exc.status, exc)
        except JSONFormatError as exc:
            status, response = 400, _error(400, exc)
        except InputTooLargeError as exc:
            status, response = 413, _error(413, exc)
        except (ValidationError, InvalidInputError) as exc:
            status, response = 422, _error(422, exc)
        except Exception as exc:
            # A bug or a model failure: logged here, never a stack trace to the caller.
            logger.exception("%s failed", endpoint)
            status = 500
            message = str(exc) if isinstance(exc, TruthLensError) else "internal error"
            response = JSONResponse(
                {"error": type(exc).__name__, "message": message}, status_code=500
            )
        self.metrics.requests.inc(tags={"endpoint": endpoint, "status": str(status)})
        self.metrics.latency.observe(time.perf_counter() - started, tags={"endpoint": endpoint})
        return response

    async def _body(self, request: Request) -> bytes:
        limit = self.settings.max_request_bytes
        declared = request.headers.get("content-length") or ""
        # A length of more digits than any limit is over it (and no int() of 5,000 digits).
        if declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
            shown = declared if len(declared) <= 18 else f"{len(declared)}-digit"
            raise _HTTPError(413, f"request body of {shown} bytes is over {limit} bytes")
        chunks: list[bytes] = []
        size = 0
        # Chunked bodies have no length header: count while reading.
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _HTTPError(413, f"request body is over {limit} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    def _inputs(self, body: Any, *, guard: bool = False) -> tuple[list[DetectionInput], bool, bool]:
        """The request's inputs, whether it was a single (unwrapped) one, and ``redact``."""
        request: _Item | _Batch
        if isinstance(body, dict) and "inputs" in body:
            request = (_GuardBatch if guard else _Batch).model_validate(body)
            items, single = request.inputs, False
        else:
            request = (_GuardItem if guard else _Item).model_validate(body)
            items, single = [request], True
        if len(items) > self.settings.max_inputs:
            raise _HTTPError(413, f"{len(items)} inputs; at most {self.settings.max_inputs}")
        inputs = [
            DetectionInput.create(context=i.context, question=i.question, answer=i.answer)
            for i in items
        ]
        check_input_sizes(inputs, self.limits)
        return inputs, single, bool(getattr(request, "redact", False))

    async def _admit(self, texts: list[str]) -> contextlib.AbstractAsyncContextManager[Any]:
        """The lane a request runs in; 413 for more than ``max_request_tokens`` tokens.

        A large request's lane lets one run at a time; a small one's is no lane at all.
        Two large requests at once would each take the cores the other needs while small
        requests wait behind both; in turns, each finishes sooner and small requests
        share the cores with one. Counted in a worker thread: normalising and tokenising
        up to the character limits takes a second the event loop must not wait for.
        """
        budget = self.limits.max_request_tokens
        tokens = await asyncio.to_thread(check_request_tokens, texts, budget, self.count_tokens)
        if tokens > budget * _LARGE_SHARE:
            return self.large_lane
        return contextlib.nullcontext()

    def _chunks(self, inputs: list[DetectionInput]) -> list[list[DetectionInput]]:
        """Consecutive inputs of at most ``max_answer_chars`` answer characters (one or more).

        Chunks are sent to the batcher one after another: a small request that arrives
        meanwhile joins the queue ahead of the big one's next chunk, instead of waiting
        for all of it.
        """
        chunks: list[list[DetectionInput]] = []
        size = self.limits.max_answer_chars + 1
        for item in inputs:
            if size + len(item.answer) > self.limits.max_answer_chars:
                chunks.append([])
                size = 0
            chunks[-1].append(item)
            size += len(item.answer)
        return chunks

    async def _detect(self, body: Any) -> Any:
        inputs, single, _ = self._inputs(body)
        results: list[DetectionResult] = []
        async with await self._admit(_request_texts(inputs)):
            for chunk in self._chunks(inputs):
                if self.batching:
                    results += await asyncio.gather(*(self._detect_one(x) for x in chunk))
                else:
                    results += await self._detect_many(chunk)
        for result in results:
            self.metrics.answers.inc(tags={"status": result.status.value})
        dumped = [r.model_dump(mode="json") for r in results]
        return dumped[0] if single else {"results": dumped}

    async def _guard(self, body: Any) -> Any:
        inputs, single, redact = self._inputs(body, guard=True)
        verdicts: list[Verdict] = []
        async with await self._admit(_request_texts(inputs)):
            for chunk in self._chunks(inputs):
                if self.batching:
                    verdicts += await asyncio.gather(*(self._guard_one(x) for x in chunk))
                else:
                    verdicts += await self._guard_many(chunk)
        redact = redact or self.settings.redact
        verdicts = [_withheld(v, redact=redact) for v in verdicts]
        dumped = [v.model_dump(mode="json") for v in verdicts]
        if single:
            return JSONResponse(dumped[0], headers=_headers(verdicts[0].metadata))
        return {"verdicts": dumped}

    async def _nli(self, body: Any) -> Any:
        pairs = _Pairs.model_validate(body).pairs
        if len(pairs) > self.settings.max_inputs:
            raise _HTTPError(413, f"{len(pairs)} pairs; at most {self.settings.max_inputs}")
        for n, (premise, hypothesis) in enumerate(pairs, start=1):
            _check_text(premise, f"the premise of pair {n}", self.limits.max_context_chars)
            _check_text(hypothesis, f"the hypothesis of pair {n}", self.limits.max_answer_chars)
        lane = await self._admit([text for pair in pairs for text in pair])
        explainer = self.explainer
        if explainer is None:
            raise _HTTPError(503, "this service has no NLI explainer")
        async with lane:
            labels = await asyncio.to_thread(explainer.explain, pairs) if pairs else []
        self.metrics.batch.observe(len(pairs), tags={"stage": "nli"})
        model_id = getattr(explainer, "model_id", "unknown")
        return {"labels": [[lab, conf] for lab, conf in labels], "model_id": model_id}

    async def _classify(self, body: Any) -> Any:
        prompts = _Prompts.model_validate(body).prompts
        if len(prompts) > self.settings.max_inputs:
            raise _HTTPError(413, f"{len(prompts)} prompts; at most {self.settings.max_inputs}")
        for n, prompt in enumerate(prompts, start=1):
            _check_text(prompt, f"prompt {n}", self.limits.max_context_chars)
        async with await self._admit(prompts):
            results = await asyncio.to_thread(self.classifier.classify, prompts) if prompts else []
        self.metrics.batch.observe(len(prompts), tags={"stage": "classify"})
        return {
            "results": [[bool(need), float(conf)] for need, conf in results],
            "model_id": getattr(self.classifier, "model_id", "unknown"),
        }

    # -- model calls: batched across concurrent requests, or one request at a time ------

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.01)
    async def _detect_one(self, inputs: list[DetectionInput]) -> list[DetectionResult]:
        return await self._detect_many(inputs)

    async def _detect_many(self, inputs: list[DetectionInput]) -> list[DetectionResult]:
        self.metrics.batch.observe(len(inputs), tags={"stage": "detect"})
        return await asyncio.to_thread(self.detector.detect_batch, inputs)

    @serve.batch(max_batch_size=16, batch_wait_timeout_s=0.01)
    async def _guard_one(self, inputs: list[DetectionInput]) -> list[Verdict]:
        return await self._guard_many(inputs)

    async def _guard_many(self, inputs: list[DetectionInput]) -> list[Verdict]:
        self.metrics.batch.observe(len(inputs), tags={"stage": "guard"})
        return await asyncio.to_thread(self.engine.guard_batch, inputs)


def deployment_options(policy: Policy) -> dict[str, Any]:
    """Ray Serve deployment options from the policy's ``service`` block."""
    service = policy.service
    options: dict[str, Any] = {
        "ray_actor_options": {"num_cpus": service.num_cpus, "num_gpus": service.num_gpus},
        "max_ongoing_requests": service.max_ongoing_requests,
        # Model loading on a busy CPU can take a while; do not declare it dead early.
        "health_check_timeout_s": 60,
    }
    if service.autoscaling is not None:
        options["autoscaling_config"] = service.autoscaling.as_ray_config()
    else:
        options["num_replicas"] = service.replicas
    return options


def service_app(
    policy: PolicySource = None,
    *,
    host: str | None = None,
    port: int | None = None,
    **overrides: Unpack[ServiceKwargs],
) -> Application:
    """The bound application for ``serve.run``.

    Args:
        policy: Anything :func:`load_policy` accepts.
        host: Overrides ``service.host``.
        port: Overrides ``service.port``.
        **overrides: Other ``service`` fields to replace (``replicas=2``,
            ``max_batch_size=1``; :class:`ServiceKwargs`).

    Returns:
        The application, with the policy passed to every replica as data (replicas on
        other nodes do not need the policy file).
    """
    # Validated like the policy file: a bad override is a ConfigError naming it.
    loaded = resolved_policy(policy, host=host, port=port, **overrides)
    data = loaded.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    deployment: Any = TruthLensService  # a Ray Serve Deployment once decorated
    app: Application = deployment.options(**deployment_options(loaded)).bind(data)
    return app


def build_app(args: dict[str, Any]) -> Application:
    """Application builder for ``serve run`` / ``serve deploy`` / KubeRay ``RayService``.

    ``import_path: truthlens_integrations.serve:build_app`` with ``args: {config:
    /path/policy.yaml}``; any other key of ``args`` overrides a ``service`` field.
    """
    args = dict(args)
    config = args.pop("config", None)
    return service_app(config, **args)
