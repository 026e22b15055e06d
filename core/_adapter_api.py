"""What the package's own integrations need from the core: the internal adapter interface.

The core has two surfaces. Users import the public packages (``truthlens_integrations``,
``.core``, ``.core.engine``, ``.core.policy``, ...: the names pinned in
``tests/data/public_api.json``). The LangChain and LlamaIndex adapters, the service, the
command line, the evaluation harness and the scripted test models import those and this
module, and no other private module of the core (``tests/project/test_layout.py`` holds them to
it). A name here is an internal contract between the core and its adapters: it may
change with the package, without a deprecation, and is not documented for users.

Importing this module stays as light as importing the core: the helpers of the core's
shared modules are here at once, and every other name loads its module on first use
(``from ._adapter_api import engine_from`` imports the engine then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._frameworks import register_llm_wrapper
from ._json import loads_strict
from ._limits import (
    InputLimits,
    answer_sentences,
    at_most_one_token_per_char,
    check_input_sizes,
    check_request_tokens,
    readable_chars,
)
from ._optional import lazy_attributes, require
from ._text import content_words, split_sentences

if TYPE_CHECKING:
    from ._arguments import reject_unknown
    from ._calibration._claim import combined_score, fit_claim_weight
    from ._calibration._file import (
        CALIBRATION_FORMAT,
        CalibrationFile,
        check_calibration_detector,
    )
    from ._calibration._fit import fit_response_map, threshold_for
    from ._calibration._planted import check_flags_planted_file, load_calibration_file
    from ._decision import NOT_CHECKED_WORDS
    from .engine._blocked import EngineBlocking, OnBlock, verdict_of, verdict_payload
    from .engine._build import engine_from
    from .engine._models import load_claim_checker
    from .engine._options import POLICY_KNOB_NAMES, split_options
    from .engine._tools import GuardCall, GuardTools, arun_guard, run_guard
    from .engine._verdict import REDACTED, Verdict, redact_verdict
    from .llm._base import ensure_text, timed_response
    from .llm._coerce import to_llm
    from .llm._wrapped import WrappedLLM
    from .mitigation._feedback import build_refiner_messages, fallback_query
    from .mitigation._prompts import build_refine_messages, defuse, format_documents, mark_spans
    from .mitigation._text import numbers
    from .models._loading import export_onnx
    from .models.claims._reading import ClaimReading, read_claims
    from .models.detection._base import covered
    from .models.detection._factory import runs_model
    from .models.detection._lexical import lexical_nli
    from .models.detection._rescore import RouteCalibration, answer_signals, rescore
    from .observability._logging import log_event
    from .policy._config import fitted_cascade, read_fitted_claim_check
    from .policy._fields import Precision
    from .policy._service import ReplicaKwargs, ServiceKwargs

# name -> the module of the core that defines it, imported when the name is first read
_LAZY = {
    # building an engine from an adapter's keyword arguments
    "engine_from": "engine._build",
    # one guard call, typed: what an adapter hands the engine
    "GuardCall": "engine._tools",
    "GuardTools": "engine._tools",
    "run_guard": "engine._tools",
    "arun_guard": "engine._tools",
    "split_options": "engine._options",
    "POLICY_KNOB_NAMES": "engine._options",
    "reject_unknown": "_arguments",
    # the words every surface says a reason for not checking an answer in
    "NOT_CHECKED_WORDS": "_decision",
    # blocked answers and verdict payloads
    "EngineBlocking": "engine._blocked",
    "OnBlock": "engine._blocked",
    "verdict_of": "engine._blocked",
    "verdict_payload": "engine._blocked",
    "REDACTED": "engine._verdict",
    "redact_verdict": "engine._verdict",
    # framework models behind the core's LLM protocol
    "WrappedLLM": "llm._wrapped",
    "ensure_text": "llm._base",
    "timed_response": "llm._base",
    "to_llm": "llm._coerce",
    # mitigation building blocks the adapters run in their own frameworks
    "fallback_query": "mitigation._feedback",
    "build_refiner_messages": "mitigation._feedback",
    "build_refine_messages": "mitigation._prompts",
    "defuse": "mitigation._prompts",
    "format_documents": "mitigation._prompts",
    "mark_spans": "mitigation._prompts",
    "numbers": "mitigation._text",
    "log_event": "observability._logging",
    # the command line: ONNX export, the lexical reference, response-map calibration
    "export_onnx": "models._loading",
    "lexical_nli": "models.detection._lexical",
    "runs_model": "models.detection._factory",
    "covered": "models.detection._base",
    "CALIBRATION_FORMAT": "_calibration._file",
    "CalibrationFile": "_calibration._file",
    "check_calibration_detector": "_calibration._file",
    "check_flags_planted_file": "_calibration._planted",
    "load_calibration_file": "_calibration._planted",
    "fit_response_map": "_calibration._fit",
    "threshold_for": "_calibration._fit",
    # a claim checker in the cascade, fitted and measured outside a request
    "combined_score": "_calibration._claim",
    "fit_claim_weight": "_calibration._claim",
    "load_claim_checker": "engine._models",
    "ClaimReading": "models.claims._reading",
    "read_claims": "models.claims._reading",
    "fitted_cascade": "policy._config",
    "read_fitted_claim_check": "policy._config",
    "RouteCalibration": "models.detection._rescore",
    "rescore": "models.detection._rescore",
    "answer_signals": "models.detection._rescore",
    # the service's settings
    "Precision": "policy._fields",
    "ReplicaKwargs": "policy._service",
    "ServiceKwargs": "policy._service",
}

__getattr__, __dir__ = lazy_attributes(
    __name__, {name: f"{__package__}.{module}" for name, module in _LAZY.items()}
)


def verdict_headers(verdict: Verdict, *, include_details: bool) -> dict[str, str]:
    """The verdict's ``x-*`` headers (``include_details``: the spans' text too)."""
    from .engine._conclude import _metadata

    return _metadata(verdict, include_details=include_details)


__all__ = [
    "CALIBRATION_FORMAT",
    "NOT_CHECKED_WORDS",
    "POLICY_KNOB_NAMES",
    "REDACTED",
    "CalibrationFile",
    "ClaimReading",
    "EngineBlocking",
    "GuardCall",
    "GuardTools",
    "InputLimits",
    "OnBlock",
    "Precision",
    "ReplicaKwargs",
    "RouteCalibration",
    "ServiceKwargs",
    "WrappedLLM",
    "answer_sentences",
    "answer_signals",
    "arun_guard",
    "at_most_one_token_per_char",
    "build_refine_messages",
    "build_refiner_messages",
    "check_calibration_detector",
    "check_flags_planted_file",
    "check_input_sizes",
    "check_request_tokens",
    "combined_score",
    "content_words",
    "covered",
    "defuse",
    "engine_from",
    "ensure_text",
    "export_onnx",
    "fallback_query",
    "fit_claim_weight",
    "fit_response_map",
    "fitted_cascade",
    "format_documents",
    "lazy_attributes",
    "lexical_nli",
    "load_calibration_file",
    "load_claim_checker",
    "loads_strict",
    "log_event",
    "mark_spans",
    "numbers",
    "read_claims",
    "read_fitted_claim_check",
    "readable_chars",
    "redact_verdict",
    "register_llm_wrapper",
    "reject_unknown",
    "require",
    "rescore",
    "run_guard",
    "runs_model",
    "split_options",
    "split_sentences",
    "threshold_for",
    "timed_response",
    "to_llm",
    "verdict_headers",
    "verdict_of",
    "verdict_payload",
]
