"""What the model lab and the benchmarks need from the product besides its public names.

The product has three surfaces. Users import the public packages (the names pinned in
``tests/data/public_api.json``); the adapters, the service, the command line and the
harness import those and ``core/_adapter_api.py``; and the model lab and the benchmark
scripts, which are not installed, import the public packages and this module, and no
other private module of the product (``tests/project/test_layout.py`` holds them to it,
and holds the product to never importing this module).

This is the lab's interface, not the users': it is internal, changes with the package
without a deprecation, and is not documented for users. It lists exactly what the lab
and the benchmarks import (the layout test fails on a name nobody imports); a name the
product already makes public is imported from its public package instead. Where a
script switches a rule off or measures a stage (``mock.patch.object``), it gets the
module itself (the ``*_module`` names). A private helper is listed under a plain name
(``onnx_threads`` is ``core.models._onnx._threads``).

Importing this module imports nothing of the product: each name loads its module when it
is first read, and is read from that module every time, so a patched attribute reads as
patched (as ``from module import name`` would have at that moment).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from truthlens_integrations.core import _language as language_module
    from truthlens_integrations.core import _normalize as normalize_module
    from truthlens_integrations.core import _quantities as quantities_module
    from truthlens_integrations.core import _scoring as scoring_module
    from truthlens_integrations.core._calibration import _fit as calibration_fit_module
    from truthlens_integrations.core._calibration import _signals as calibration_signals_module
    from truthlens_integrations.core._calibration._claim import combined_score, fit_claim_weight
    from truthlens_integrations.core._calibration._file import (
        CALIBRATION_FORMAT,
        read_calibration_file,
    )
    from truthlens_integrations.core._calibration._fit import (
        DEFAULT_SIGNALS,
        SIGNALS,
        fit_response_map,
    )
    from truthlens_integrations.core._calibration._map import (
        ResponseCalibration,
        calibrated_score,
        read_response_calibration,
    )
    from truthlens_integrations.core._calibration._planted import (
        PLANTED,
        PLANTED_FILE,
        planted_answers,
    )
    from truthlens_integrations.core._calibration._signals import (
        COEFFICIENTS,
        ResponseSignals,
        response_signals,
        sentence_count,
        sentence_peak,
        sentence_signals,
    )
    from truthlens_integrations.core._quantities import (
        ContextQuantities,
        extract_quantities,
        judge_quantity,
    )
    from truthlens_integrations.core._scoring import merge_spans
    from truthlens_integrations.core._text import (
        COMPOUND_WORD,
        STOP_WORDS,
        content_words,
        select_premise,
        split_sentences,
        stripped_range,
        words,
    )
    from truthlens_integrations.core._units import measure
    from truthlens_integrations.core.engine import _injection as injection_module
    from truthlens_integrations.core.engine import (
        _injection_patterns as injection_patterns_module,
    )
    from truthlens_integrations.core.engine._injection import find_instructions
    from truthlens_integrations.core.engine._premise import answer_sentence
    from truthlens_integrations.core.llm._local import clear_local_llm_cache, smollm2_gguf_path
    from truthlens_integrations.core.models._onnx import _threads as onnx_threads
    from truthlens_integrations.core.models.claims._extract import answer_claims
    from truthlens_integrations.core.models.detection import (
        _evidence_detector as evidence_detector_module,
    )
    from truthlens_integrations.core.models.detection import _rules as rules_module
    from truthlens_integrations.core.models.detection._claims import (
        PREMISE_SENTENCES,
        claim_logits,
    )
    from truthlens_integrations.core.models.detection._evidence import (
        _CANDIDATES as EVIDENCE_CANDIDATES,
    )
    from truthlens_integrations.core.models.detection._evidence import (
        ContextIndex,
        fill_budget,
        plan_rows,
    )
    from truthlens_integrations.core.models.detection._evidence import _choose as choose_evidence
    from truthlens_integrations.core.models.detection._evidence import (
        _interleave as interleave_rankings,
    )
    from truthlens_integrations.core.models.detection._evidence import _query as evidence_query
    from truthlens_integrations.core.models.detection._lexical import (
        STOPWORDS as LEXICAL_STOPWORDS,
    )
    from truthlens_integrations.core.models.detection._lexical import (
        absent_words,
        normalize_word,
    )
    from truthlens_integrations.core.models.detection._prompt import format_prompt
    from truthlens_integrations.core.models.detection._rescore import (
        RouteCalibration,
        answer_evidence,
        answer_signals,
    )
    from truthlens_integrations.core.models.detection._rules import _negations as negations
    from truthlens_integrations.core.models.detection._rules import (
        _number_verdicts as number_verdicts,
    )
    from truthlens_integrations.core.models.detection._rules import (
        _rule_verdicts as rule_verdicts,
    )
    from truthlens_integrations.core.models.detection._rules import (
        abstentions,
        conflict_marks,
        rule_conflicts,
        uncounted_spans,
    )
    from truthlens_integrations.core.models.detection._transformer import (
        _calibration as detector_calibration,
    )
    from truthlens_integrations.evaluation._metrics import reliability_bins
    from truthlens_integrations.evaluation._rag_readers import (
        ragtruth_dev_split,
        read_attributionbench,
        read_expertqa,
        read_faithjudge,
        read_ragtruth_dev,
    )
    from truthlens_integrations.evaluation._readers import _ragtruth_context as ragtruth_context
    from truthlens_integrations.evaluation._readers import (
        default_data_dir,
        read_ragtruth,
        read_snli,
        subsample,
        wice_token_spans,
    )
    from truthlens_integrations.evaluation._runner import machine_info
    from truthlens_integrations.serve._app import APP_NAME

_CORE = "truthlens_integrations.core"
_CALIBRATION = f"{_CORE}._calibration"
_DETECTION = f"{_CORE}.models.detection"
_EVALUATION = "truthlens_integrations.evaluation"

# name -> (the module that defines it, its name there); None: the module itself
_LAZY: dict[str, tuple[str, str | None]] = {
    # text and spans
    "COMPOUND_WORD": (f"{_CORE}._text", "COMPOUND_WORD"),
    "STOP_WORDS": (f"{_CORE}._text", "STOP_WORDS"),
    "content_words": (f"{_CORE}._text", "content_words"),
    "select_premise": (f"{_CORE}._text", "select_premise"),
    "split_sentences": (f"{_CORE}._text", "split_sentences"),
    "stripped_range": (f"{_CORE}._text", "stripped_range"),
    "words": (f"{_CORE}._text", "words"),
    "answer_sentence": (f"{_CORE}.engine._premise", "answer_sentence"),
    "answer_claims": (f"{_CORE}.models.claims._extract", "answer_claims"),
    "abstentions": (f"{_CORE}.models.detection._rules", "abstentions"),
    "combined_score": (f"{_CORE}._calibration._claim", "combined_score"),
    "fit_claim_weight": (f"{_CORE}._calibration._claim", "fit_claim_weight"),
    # the instruction filter and the languages the detector reads
    "find_instructions": (f"{_CORE}.engine._injection", "find_instructions"),
    "injection_module": (f"{_CORE}.engine._injection", None),
    "injection_patterns_module": (f"{_CORE}.engine._injection_patterns", None),
    "language_module": (f"{_CORE}._language", None),
    "merge_spans": (f"{_CORE}._scoring", "merge_spans"),
    "scoring_module": (f"{_CORE}._scoring", None),
    # the number reader and the runtime rules
    "ContextQuantities": (f"{_CORE}._quantities", "ContextQuantities"),
    "extract_quantities": (f"{_CORE}._quantities", "extract_quantities"),
    "judge_quantity": (f"{_CORE}._quantities", "judge_quantity"),
    "measure": (f"{_CORE}._units", "measure"),
    "quantities_module": (f"{_CORE}._quantities", None),
    "normalize_module": (f"{_CORE}._normalize", None),
    "conflict_marks": (f"{_DETECTION}._rules", "conflict_marks"),
    "rule_conflicts": (f"{_DETECTION}._rules", "rule_conflicts"),
    "uncounted_spans": (f"{_DETECTION}._rules", "uncounted_spans"),
    "negations": (f"{_DETECTION}._rules", "_negations"),
    "number_verdicts": (f"{_DETECTION}._rules", "_number_verdicts"),
    "rule_verdicts": (f"{_DETECTION}._rules", "_rule_verdicts"),
    "rules_module": (f"{_DETECTION}._rules", None),
    # the response calibration: signals, map, file and fit
    "COEFFICIENTS": (f"{_CALIBRATION}._signals", "COEFFICIENTS"),
    "ResponseSignals": (f"{_CALIBRATION}._signals", "ResponseSignals"),
    "response_signals": (f"{_CALIBRATION}._signals", "response_signals"),
    "sentence_count": (f"{_CALIBRATION}._signals", "sentence_count"),
    "sentence_peak": (f"{_CALIBRATION}._signals", "sentence_peak"),
    "sentence_signals": (f"{_CALIBRATION}._signals", "sentence_signals"),
    "calibration_signals_module": (f"{_CALIBRATION}._signals", None),
    "ResponseCalibration": (f"{_CALIBRATION}._map", "ResponseCalibration"),
    "calibrated_score": (f"{_CALIBRATION}._map", "calibrated_score"),
    "read_response_calibration": (f"{_CALIBRATION}._map", "read_response_calibration"),
    "CALIBRATION_FORMAT": (f"{_CALIBRATION}._file", "CALIBRATION_FORMAT"),
    "read_calibration_file": (f"{_CALIBRATION}._file", "read_calibration_file"),
    "DEFAULT_SIGNALS": (f"{_CALIBRATION}._fit", "DEFAULT_SIGNALS"),
    "SIGNALS": (f"{_CALIBRATION}._fit", "SIGNALS"),
    "fit_response_map": (f"{_CALIBRATION}._fit", "fit_response_map"),
    "PLANTED": (f"{_CALIBRATION}._planted", "PLANTED"),
    "PLANTED_FILE": (f"{_CALIBRATION}._planted", "PLANTED_FILE"),
    "planted_answers": (f"{_CALIBRATION}._planted", "planted_answers"),
    "calibration_fit_module": (f"{_CALIBRATION}._fit", None),
    "RouteCalibration": (f"{_DETECTION}._rescore", "RouteCalibration"),
    "answer_evidence": (f"{_DETECTION}._rescore", "answer_evidence"),
    "answer_signals": (f"{_DETECTION}._rescore", "answer_signals"),
    # the detector's parts: evidence selection, prompts, claims, the lexical reference
    "ContextIndex": (f"{_DETECTION}._evidence", "ContextIndex"),
    "fill_budget": (f"{_DETECTION}._evidence", "fill_budget"),
    "plan_rows": (f"{_DETECTION}._evidence", "plan_rows"),
    "EVIDENCE_CANDIDATES": (f"{_DETECTION}._evidence", "_CANDIDATES"),
    "choose_evidence": (f"{_DETECTION}._evidence", "_choose"),
    "evidence_query": (f"{_DETECTION}._evidence", "_query"),
    "interleave_rankings": (f"{_DETECTION}._evidence", "_interleave"),
    "evidence_detector_module": (f"{_DETECTION}._evidence_detector", None),
    "format_prompt": (f"{_DETECTION}._prompt", "format_prompt"),
    "PREMISE_SENTENCES": (f"{_DETECTION}._claims", "PREMISE_SENTENCES"),
    "claim_logits": (f"{_DETECTION}._claims", "claim_logits"),
    "LEXICAL_STOPWORDS": (f"{_DETECTION}._lexical", "STOPWORDS"),
    "absent_words": (f"{_DETECTION}._lexical", "absent_words"),
    "normalize_word": (f"{_DETECTION}._lexical", "normalize_word"),
    "detector_calibration": (f"{_DETECTION}._transformer", "_calibration"),
    "onnx_threads": (f"{_CORE}.models._onnx", "_threads"),
    # the local LLM backend's weights
    "clear_local_llm_cache": (f"{_CORE}.llm._local", "clear_local_llm_cache"),
    "smollm2_gguf_path": (f"{_CORE}.llm._local", "smollm2_gguf_path"),
    # the harness's data readers and reports
    "default_data_dir": (f"{_EVALUATION}._readers", "default_data_dir"),
    "read_ragtruth": (f"{_EVALUATION}._readers", "read_ragtruth"),
    "read_snli": (f"{_EVALUATION}._readers", "read_snli"),
    "subsample": (f"{_EVALUATION}._readers", "subsample"),
    "wice_token_spans": (f"{_EVALUATION}._readers", "wice_token_spans"),
    "ragtruth_context": (f"{_EVALUATION}._readers", "_ragtruth_context"),
    "ragtruth_dev_split": (f"{_EVALUATION}._rag_readers", "ragtruth_dev_split"),
    "read_attributionbench": (f"{_EVALUATION}._rag_readers", "read_attributionbench"),
    "read_expertqa": (f"{_EVALUATION}._rag_readers", "read_expertqa"),
    "read_faithjudge": (f"{_EVALUATION}._rag_readers", "read_faithjudge"),
    "read_ragtruth_dev": (f"{_EVALUATION}._rag_readers", "read_ragtruth_dev"),
    "reliability_bins": (f"{_EVALUATION}._metrics", "reliability_bins"),
    "machine_info": (f"{_EVALUATION}._runner", "machine_info"),
    # the service's application name (the serve extra)
    "APP_NAME": ("truthlens_integrations.serve._app", "APP_NAME"),
}


def __getattr__(name: str) -> Any:
    """``name`` read from its module (imported on first use); never kept here."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    loaded: ModuleType = importlib.import_module(module)
    return loaded if attribute is None else getattr(loaded, attribute)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "APP_NAME",
    "CALIBRATION_FORMAT",
    "COEFFICIENTS",
    "COMPOUND_WORD",
    "DEFAULT_SIGNALS",
    "EVIDENCE_CANDIDATES",
    "LEXICAL_STOPWORDS",
    "PLANTED",
    "PLANTED_FILE",
    "PREMISE_SENTENCES",
    "SIGNALS",
    "STOP_WORDS",
    "ContextIndex",
    "ContextQuantities",
    "ResponseCalibration",
    "ResponseSignals",
    "RouteCalibration",
    "absent_words",
    "abstentions",
    "answer_claims",
    "answer_evidence",
    "answer_sentence",
    "answer_signals",
    "calibrated_score",
    "calibration_fit_module",
    "calibration_signals_module",
    "choose_evidence",
    "claim_logits",
    "clear_local_llm_cache",
    "combined_score",
    "conflict_marks",
    "content_words",
    "default_data_dir",
    "detector_calibration",
    "evidence_detector_module",
    "evidence_query",
    "extract_quantities",
    "fill_budget",
    "find_instructions",
    "fit_claim_weight",
    "fit_response_map",
    "format_prompt",
    "injection_module",
    "injection_patterns_module",
    "interleave_rankings",
    "judge_quantity",
    "language_module",
    "machine_info",
    "measure",
    "merge_spans",
    "negations",
    "normalize_module",
    "normalize_word",
    "number_verdicts",
    "onnx_threads",
    "plan_rows",
    "planted_answers",
    "quantities_module",
    "ragtruth_context",
    "ragtruth_dev_split",
    "read_attributionbench",
    "read_calibration_file",
    "read_expertqa",
    "read_faithjudge",
    "read_ragtruth",
    "read_ragtruth_dev",
    "read_response_calibration",
    "read_snli",
    "reliability_bins",
    "response_signals",
    "rule_conflicts",
    "rule_verdicts",
    "rules_module",
    "scoring_module",
    "select_premise",
    "sentence_count",
    "sentence_peak",
    "sentence_signals",
    "smollm2_gguf_path",
    "split_sentences",
    "stripped_range",
    "subsample",
    "uncounted_spans",
    "wice_token_spans",
    "words",
]
