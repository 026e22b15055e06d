"""Evaluation harness: benchmark readers, metrics and reports.

Run any :class:`~truthlens_integrations.core.models.Detector` over RAGTruth,
HaluEval or FaithBench with :func:`run_evaluation`, an NLI model over SNLI with
:func:`run_nli_evaluation`, and write the result with :func:`write_report`. The metric
definitions are in :mod:`truthlens_integrations.evaluation._metrics`.

HaluEval is training data: training must use ``halueval_split(items, "train")`` and
evaluation reads the ``"heldout"`` part (the last 10% of each file by index).
"""

from __future__ import annotations

from . import _metrics, _rag_readers, _readers, _records, _reports, _runner
from ._metrics import *  # noqa: F403 - each module's __all__ is public here
from ._rag_readers import *  # noqa: F403
from ._readers import *  # noqa: F403
from ._records import *  # noqa: F403
from ._reports import *  # noqa: F403
from ._runner import *  # noqa: F403

__all__ = (
    _metrics.__all__
    + _rag_readers.__all__
    + _readers.__all__
    + _records.__all__
    + _reports.__all__
    + _runner.__all__
)
