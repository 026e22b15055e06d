"""Tests of ``truthlens_integrations/evaluation/_reports.py``: written reports: JSON, Markdown,
plots.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from tests._paths import RAGTRUTH
from truthlens_integrations.core.models.detection import LexicalDetector
from truthlens_integrations.evaluation import (
    EvalReport,
    render_markdown,
    run_evaluation,
    write_report,
)
from truthlens_integrations.evaluation._readers import read_ragtruth
from truthlens_integrations.evaluation._reports import write_plots


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


# ----------------------------------------------------------------------------- reports


def test_write_report_json_markdown_plots(tmp_path: Path) -> None:
    report = run_evaluation(LexicalDetector(), read_ragtruth(RAGTRUTH), progress=False)
    written = write_report(report, tmp_path)
    names = {p.name for p in written}
    assert {"ragtruth_lexical.json", "ragtruth_lexical.md"} <= names
    loaded = EvalReport.model_validate(json.loads((tmp_path / "ragtruth_lexical.json").read_text()))
    assert loaded.overall == report.overall
    markdown = (tmp_path / "ragtruth_lexical.md").read_text()
    assert "| **overall** | 3 | 2 |" in markdown and "| QA | 1 | 1 |" in markdown
    if "matplotlib" in sys.modules or _has_matplotlib():
        for name in ("ragtruth_lexical_pr_curve.png", "ragtruth_lexical_f1_threshold.png"):
            assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plots_skipped_without_matplotlib(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    report = run_evaluation(LexicalDetector(), read_ragtruth(RAGTRUTH), progress=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with caplog.at_level(logging.WARNING):
        assert write_plots(report, tmp_path, stem="x") == []
    assert "matplotlib is not installed" in caplog.text
    assert "| **overall** |" in render_markdown(report)
