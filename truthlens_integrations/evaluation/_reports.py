"""Report writers: JSON, a markdown table and PNG plots (precision-recall, F1 vs threshold)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from ._metrics import BinaryMetrics, SpanMetrics
from ._runner import CascadeComparison, ClassifierReport, EvalReport, GroupMetrics, NLIReport

__all__ = [
    "AnyReport",
    "render_markdown",
    "write_json",
    "write_markdown",
    "write_plots",
    "write_report",
]

logger = logging.getLogger(__name__)

AnyReport = EvalReport | NLIReport | ClassifierReport


def write_json(
    report: AnyReport, path: str | os.PathLike[str], *, include_predictions: bool = True
) -> Path:
    """Write the report as indented JSON.

    Args:
        report: Any evaluation report.
        path: Output file; parent folders are created.
        include_predictions: Keep the per-example predictions of a detection report.

    Returns:
        The written path.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    exclude = None if include_predictions else {"predictions"}
    data = report.model_dump(mode="json", exclude=exclude)
    target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return target


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _row(name: str, group: GroupMetrics) -> str:
    ex = group.example
    token_f1 = group.token.f1 if group.token else None
    char: SpanMetrics | None = group.char
    cells = [
        name, str(group.n), str(group.positives),
        _f(ex.precision), _f(ex.recall), _f(ex.f1), _f(ex.balanced_accuracy),
        _f(group.average_precision), _f(group.auroc), _f(token_f1),
        _f(char.precision if char else None), _f(char.recall if char else None),
        _f(char.f1 if char else None),
        _f(ex.fp / (ex.fp + ex.tn) if ex.fp + ex.tn else None),
    ]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def _binary_row(name: str, m: BinaryMetrics) -> str:
    cells = [name, str(m.n), _f(m.precision), _f(m.recall), _f(m.f1), _f(m.accuracy),
             _f(m.balanced_accuracy)]  # fmt: skip
    return "| " + " | ".join(cells) + " |"


def _header(report: AnyReport) -> list[str]:
    lines = [
        f"## {report.dataset} — {report.model_id}",
        "",
        f"- examples: {report.n_examples}, batch size {report.batch_size}, "
        f"created {report.created_at}",
        f"- latency per example: mean {report.latency.mean_ms:.2f} ms, "
        f"p50 {report.latency.p50_ms:.2f} ms, p99 {report.latency.p99_ms:.2f} ms "
        f"({report.examples_per_second:.1f} examples/s)",
        "- machine: " + ", ".join(f"{k} {v}" for k, v in report.machine.items()),
    ]
    if report.command:
        lines.append(f"- command: `{report.command}`")
    backend = getattr(report, "backend", None)  # what ran the model, where a report knows
    if backend:
        lines.append(f"- run by {backend}")
    return [*lines, ""]


def _detection_markdown(report: EvalReport) -> list[str]:
    cfg = report.config
    lines = _header(report)
    lines.insert(
        -1,
        f"- thresholds: response {cfg.threshold}, token {cfg.token_threshold}, "
        f"aggregation {cfg.aggregation}" + (f"; run by {report.backend}" if report.backend else ""),
    )
    lines += [
        "| group | n | halluc. | ex. P | ex. R | ex. F1 | bal. acc | AP | AUROC | token F1 "
        "| char P | char R | char F1 | clean flagged |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [_row(task, group) for task, group in report.per_task.items()]
    lines += [_row("**overall**", report.overall), ""]
    if report.unverifiable:
        lines += [
            f"{report.unverifiable} example(s) could not be checked (unverifiable); they count "
            "as not flagged above.",
            "",
        ]
    if report.reliability:
        lines += [
            f"Calibration of the response score: expected calibration error "
            f"**{_f(report.calibration_error)}** (10 equal-width bins).",
            "",
            "| score bin | n | mean score | hallucinated share |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            f"| {b.lower:.1f}-{b.upper:.1f} | {b.count} | {b.mean_score:.3f} | "
            f"{b.positive_rate:.3f} |"
            for b in report.reliability
        ]
        lines.append("")
    if report.oracle_best is not None:
        best = report.oracle_best
        lines += [
            f"Oracle threshold (tuned on this data, reference only): score >= "
            f"{best.threshold:.10g} gives P {best.precision:.3f} / R {best.recall:.3f} / "
            f"F1 {best.f1:.3f}.",
            "",
        ]
    if report.baselines:
        lines += [
            "Stored predictions of other systems on the same examples:",
            "",
            "| system | n | P | R | F1 | acc | bal. acc |",
            "|---|---:|---:|---:|---:|---:|---:|",
            _binary_row(f"**{report.model_id}**", report.overall.example),
        ]
        lines += [_binary_row(name, m) for name, m in report.baselines.items()]
        lines.append("")
    if report.claim_check is not None:
        lines += _cascade_markdown(report.claim_check)
    return lines


def _cascade_markdown(c: CascadeComparison) -> list[str]:
    lines = [
        f"Claim checker {c.checker} (`claim_check`: {_settings_text(c.settings)}), at threshold "
        f"{c.threshold:.3f}: the cascade sent {c.sent} answers to it; it read every answer "
        f"alone in {c.checker_seconds:.1f} s.",
        "",
        "| system | AUROC | unsupported caught | supported flagged | not checked |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {s.system} | {_f(s.auroc)} | {_f(s.caught)} | {_f(s.flagged)} | {s.not_checked} |"
        for s in c.systems
    ]
    return [*lines, ""]


def _settings_text(settings: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in settings.items())


def render_markdown(report: AnyReport) -> str:
    """Render a report as a markdown section (heading, run facts, metric tables)."""
    if isinstance(report, EvalReport):
        lines = _detection_markdown(report)
    elif isinstance(report, NLIReport):
        m = report.metrics
        lines = [*_header(report), f"Accuracy **{m.accuracy:.4f}**, macro F1 {m.macro_f1:.4f}.",
                 "", "| class | support | P | R | F1 |", "|---|---:|---:|---:|---:|"]  # fmt: skip
        lines += [
            f"| {c} | {cm.support} | {_f(cm.precision)} | {_f(cm.recall)} | {_f(cm.f1)} |"
            for c, cm in m.per_class.items()
        ]
        lines.append("")
    else:
        lines = [*_header(report), "| system | n | P | R | F1 | acc | bal. acc |",
                 "|---|---:|---:|---:|---:|---:|---:|",
                 _binary_row(report.model_id, report.metrics), ""]  # fmt: skip
    return "\n".join(lines)


def write_markdown(report: AnyReport, path: str | os.PathLike[str]) -> Path:
    """Write :func:`render_markdown` to ``path`` (parent folders are created)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_markdown(report), encoding="utf-8")
    return target


def write_plots(report: EvalReport, out_dir: str | os.PathLike[str], *, stem: str) -> list[Path]:
    """Write ``{stem}_pr_curve.png``, ``{stem}_f1_threshold.png`` and ``{stem}_reliability.png``.

    matplotlib is optional (the ``eval`` extra); without it no plot is written and a
    warning is logged.

    Args:
        report: A detection report.
        out_dir: Output folder (created).
        stem: File name prefix.

    Returns:
        The written files (empty without matplotlib or without curve points).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.warning(
            "matplotlib is not installed: skipping plots "
            "(pip install 'truthlens-integrations[eval]')"
        )
        return []
    if not report.curve:
        return []
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    plots = [("pr_curve", _plot_pr_curve), ("f1_threshold", _plot_f1_threshold)]
    if report.reliability:
        plots.append(("reliability", _plot_reliability))
    written: list[Path] = []
    for name, draw in plots:
        fig, ax = plt.subplots(figsize=(5, 4))
        draw(ax, report, f"{report.model_id} on {report.dataset}")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        written.append(folder / f"{stem}_{name}.png")
        fig.savefig(written[-1], dpi=120)
        plt.close(fig)
    return written


def _plot_pr_curve(ax: Any, report: EvalReport, title: str) -> None:
    recall = [0.0, *(p.recall for p in report.curve)]
    precision = [report.curve[0].precision, *(p.precision for p in report.curve)]
    ax.step(recall, precision, where="post")
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1), ylim=(0, 1.02),
           title=f"{title}\nAP {report.overall.average_precision:.3f}")  # fmt: skip


def _plot_f1_threshold(ax: Any, report: EvalReport, title: str) -> None:
    thresholds = [p.threshold for p in report.curve]
    ax.plot(thresholds, [p.f1 for p in report.curve], label="F1")
    ax.plot(thresholds, [p.precision for p in report.curve], label="precision", alpha=0.6)
    ax.plot(thresholds, [p.recall for p in report.curve], label="recall", alpha=0.6)
    ax.axvline(report.config.threshold, color="grey", linestyle="--", label="threshold used")
    ax.set(xlabel="response score threshold", ylabel="example-level score", ylim=(0, 1.02),
           title=title)  # fmt: skip
    ax.legend(loc="best")


def _plot_reliability(ax: Any, report: EvalReport, title: str) -> None:
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", label="perfect calibration")
    means = [b.mean_score for b in report.reliability]
    rates = [b.positive_rate for b in report.reliability]
    ax.plot(means, rates, marker="o", label="detector")
    ax.set(xlabel="response score (mean in bin)", ylabel="hallucinated share in bin",
           xlim=(0, 1), ylim=(0, 1.02),
           title=f"{title}\nECE {_f(report.calibration_error)}")  # fmt: skip
    ax.legend(loc="best")


def write_report(
    report: AnyReport,
    out_dir: str | os.PathLike[str],
    *,
    stem: str | None = None,
    include_predictions: bool = True,
    plots: bool = True,
) -> list[Path]:
    """Write JSON, markdown and (for detection reports) plots into ``out_dir``.

    Args:
        report: Any evaluation report.
        out_dir: Output folder (created).
        stem: File name prefix; default ``{dataset}_{model}`` made file-safe.
        include_predictions: Keep per-example predictions in the JSON.
        plots: Write the PNG plots of a detection report.

    Returns:
        Every written file.
    """
    name = stem or f"{report.dataset}_{report.model_id}"
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    folder = Path(out_dir)
    written = [
        write_json(report, folder / f"{name}.json", include_predictions=include_predictions),
        write_markdown(report, folder / f"{name}.md"),
    ]
    if plots and isinstance(report, EvalReport):
        written += write_plots(report, folder, stem=name)
    return written
