"""The ``service:`` block of a policy: the guard's models as a Ray Serve service.

Clients (the engine and the adapters, with ``service.url`` set) and ``truthlens serve``
read the same block, so one policy file configures both sides.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

from pydantic import AfterValidator, Field, Strict, model_validator

from .._limits import (
    MAX_ANSWER_CHARS,
    MAX_ANSWER_SENTENCES,
    MAX_CONTEXT_CHARS,
    MAX_REQUEST_ANSWER_CHARS,
    MAX_REQUEST_ANSWER_SENTENCES,
    MAX_REQUEST_CONTEXT_CHARS,
    MAX_REQUEST_TOKENS,
    InputLimits,
)
from ._fields import Name, StrictModel

__all__ = ["AutoscalingSettings", "ReplicaKwargs", "ServiceKwargs", "ServiceSettings"]


def _service_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise ValueError("must be an http:// or https:// URL, e.g. http://127.0.0.1:8000")
    return value


Seconds = Annotated[float, Strict(), Field(ge=0.0)]
Factor = Annotated[float, Strict(), Field(gt=0.0)]
Count = Annotated[int, Strict(), Field(ge=0)]


class AutoscalingSettings(StrictModel):
    """The ``service.autoscaling`` block: Ray Serve's ``autoscaling_config`` keys.

    Only the keys Ray Serve reads, each with its type: a misspelt key would be ignored
    by nobody and a wrong type would fail only when the service starts.
    """

    min_replicas: Count | None = None
    initial_replicas: Count | None = None
    max_replicas: Annotated[int, Strict(), Field(ge=1)] | None = None
    target_ongoing_requests: Factor | None = None
    metrics_interval_s: Factor | None = None
    look_back_period_s: Factor | None = None
    smoothing_factor: Factor | None = None
    upscale_smoothing_factor: Factor | None = None
    downscale_smoothing_factor: Factor | None = None
    upscaling_factor: Factor | None = None
    downscaling_factor: Factor | None = None
    downscale_delay_s: Seconds | None = None
    downscale_to_zero_delay_s: Seconds | None = None
    upscale_delay_s: Seconds | None = None
    aggregation_function: Literal["mean", "max", "min"] | None = None

    @model_validator(mode="after")
    def _bounds(self) -> AutoscalingSettings:
        low, high = self.min_replicas, self.max_replicas
        if low is not None and high is not None and low > high:
            raise ValueError(f"min_replicas ({low}) is above max_replicas ({high})")
        return self

    def as_ray_config(self) -> dict[str, float | int | str]:
        """The keys that were set, as Ray Serve's ``autoscaling_config``."""
        return self.model_dump(exclude_none=True)


class ServiceSettings(StrictModel):
    """The ``service:`` block (extension): the guard's models as a Ray Serve service.

    Clients read ``url`` .. ``on_error``: with ``url`` set, the engine and both
    adapters send detection, NLI and prompt classification to the service
    (``truthlens serve``) instead of loading models. ``truthlens serve`` reads the
    rest, so one policy file configures both sides.

    Attributes:
        url: Base URL of a running service; ``None`` runs the models in-process.
        timeout_s: Seconds per HTTP call.
        retries: Extra attempts after a transient failure (connection refused or
            dropped, 502 / 503 / 504).
        on_error: ``raise``: a failed call raises ``ServiceError``; ``unverifiable``:
            the answer is marked unverified (the ``unverified_factual_action``
            applies). Never passed as supported.
        host: Address the service listens on.
        port: Port the service listens on.
        replicas: Replicas of the model deployment (ignored when ``autoscaling`` is set).
        autoscaling: Ray Serve ``autoscaling_config`` (``min_replicas``,
            ``max_replicas``, ``target_ongoing_requests``, ...; see
            :class:`AutoscalingSettings` for the keys).
        num_cpus: CPUs Ray reserves for each replica.
        num_gpus: GPUs Ray reserves for each replica.
        max_ongoing_requests: Requests one replica takes at once before Ray queues.
        max_batch_size: Most answers in one dynamic batch; 1 turns batching off.
        batch_wait_timeout_s: How long a batch waits to fill.
        max_request_bytes: Larger request bodies are refused with 413.
        max_inputs: Most answers in one request.
        max_answer_chars: Longest answer, in characters (413 above it; a cheap proxy
            of the model's work, counted before any model runs).
        max_context_chars: Longest context of one input (passages and question
            together), in characters.
        max_request_answer_chars: All answers of one request together, in characters.
        max_request_context_chars: All contexts of one request together, in characters.
        max_request_tokens: All text of one request (any endpoint) together, in model
            tokens after normalisation (413 above it).
        max_answer_sentences: Most sentences of one answer, as the detector splits it
            (413 above it): its work grows with them, not with its characters.
        max_request_answer_sentences: All answers of one request together, in sentences.
        redact: ``/v1/guard`` leaves hallucinated text (the original answer, span
            texts, earlier rounds) out of every verdict it sends; a blocked verdict
            never carries it, whatever this says. A request can ask for it too.
    """

    url: Annotated[str | None, AfterValidator(_service_url)] = None
    # Strict like every number of the policy: `retries: true` is not 1 retry,
    # `replicas: 2.0` is not 2 replicas and `max_inputs: '10'` is not a number.
    timeout_s: Annotated[float, Strict(), Field(gt=0.0, le=3600.0)] = 30.0
    retries: Annotated[int, Strict(), Field(ge=0, le=10)] = 2
    on_error: Literal["raise", "unverifiable"] = "raise"
    host: Name = "127.0.0.1"
    port: Annotated[int, Strict(), Field(ge=1, le=65535)] = 8000
    replicas: Annotated[int, Strict(), Field(ge=1)] = 1
    autoscaling: AutoscalingSettings | None = None
    num_cpus: Annotated[float, Strict(), Field(gt=0)] = 1.0
    num_gpus: Annotated[float, Strict(), Field(ge=0)] = 0.0
    max_ongoing_requests: Annotated[int, Strict(), Field(ge=1)] = 64
    max_batch_size: Annotated[int, Strict(), Field(ge=1, le=1024)] = 16
    batch_wait_timeout_s: Annotated[float, Strict(), Field(ge=0.0, le=10.0)] = 0.01
    max_request_bytes: Annotated[int, Strict(), Field(ge=1024)] = 4_000_000
    max_inputs: Annotated[int, Strict(), Field(ge=1)] = 256
    max_answer_chars: Annotated[int, Strict(), Field(ge=1)] = MAX_ANSWER_CHARS
    max_context_chars: Annotated[int, Strict(), Field(ge=1)] = MAX_CONTEXT_CHARS
    max_request_answer_chars: Annotated[int, Strict(), Field(ge=1)] = MAX_REQUEST_ANSWER_CHARS
    max_request_context_chars: Annotated[int, Strict(), Field(ge=1)] = MAX_REQUEST_CONTEXT_CHARS
    max_request_tokens: Annotated[int, Strict(), Field(ge=1)] = MAX_REQUEST_TOKENS
    max_answer_sentences: Annotated[int, Strict(), Field(ge=1)] = MAX_ANSWER_SENTENCES
    max_request_answer_sentences: Annotated[int, Strict(), Field(ge=1)] = (
        MAX_REQUEST_ANSWER_SENTENCES
    )
    redact: Annotated[bool, Strict()] = False

    def input_limits(self) -> InputLimits:
        """The size limits of one request, shared with the command line's."""
        return InputLimits(
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(InputLimits)}
        )


class ReplicaKwargs(TypedDict, total=False):
    """The ``service`` fields a caller may override as keywords, beside the start-up ones.

    Mirrors :class:`ServiceSettings` (a test pins the keys) minus ``host``, ``port`` and
    ``num_cpus``, which the service functions take as their own keywords; values are
    checked by ``ServiceSettings`` itself. ``start_local`` takes these.
    """

    url: str | None
    timeout_s: float
    retries: int
    on_error: Literal["raise", "unverifiable"]
    replicas: int
    autoscaling: AutoscalingSettings | Mapping[str, Any] | None
    num_gpus: float
    max_ongoing_requests: int
    max_batch_size: int
    batch_wait_timeout_s: float
    max_request_bytes: int
    max_inputs: int
    max_answer_chars: int
    max_context_chars: int
    max_request_answer_chars: int
    max_request_context_chars: int
    max_request_tokens: int
    max_answer_sentences: int
    max_request_answer_sentences: int
    redact: bool


class ServiceKwargs(ReplicaKwargs, total=False):
    """:class:`ReplicaKwargs` plus ``num_cpus`` (CPUs per replica): ``deploy``, ``service_app``."""

    num_cpus: float
