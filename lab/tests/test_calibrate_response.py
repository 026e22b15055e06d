"""Fitting the response map (``lab.training.calibrate_response``, ``lab.training.rag_response``)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest

from truthlens_integrations._lab_api import ResponseCalibration
from truthlens_integrations.core import DetectionInput


def test_fit_logistic_recovers_known_coefficients() -> None:
    from lab.training.calibrate_response import fit_logistic

    rng = np.random.default_rng(3)
    x = rng.normal(size=(4000, 2))
    p = 1 / (1 + np.exp(-(1.5 * x[:, 0] - 0.7 * x[:, 1] + 0.3)))
    y = (rng.random(4000) < p).astype(float)
    coef, bias = fit_logistic(x, y, np.ones(4000))
    assert coef == pytest.approx([1.5, -0.7], abs=0.15)
    assert bias == pytest.approx(0.3, abs=0.15)


def _claim(source: str, n: int, label: int) -> SimpleNamespace:
    return SimpleNamespace(
        source=source,
        context=f"Passage {source} {n} says fact {n}.",
        question=f"question {n}?",
        answer=f"{'Wrong' if label else 'Right'} answer {source} {n}.",
        label=label,
    )


def test_multi_part_answers_are_labelled_by_their_parts() -> None:
    from lab.training.calibrate_response import multi_part_answers

    claims = [_claim("alpha/x", n, 0) for n in range(20)] + [
        _claim("alpha/y", n, 1) for n in range(5)
    ]
    claims += [_claim("tiny", n, n % 2) for n in range(6)]  # too few to join
    answers = multi_part_answers(claims, per_family=40, rng=random.Random(1))
    assert len(answers) == 40
    assert {a.source for a in answers} == {"multi/alpha"}
    for a in answers:
        parts = [p for p in claims if p.answer in a.answer]
        assert 3 <= len(parts) <= 7
        assert len(a.answer) == sum(len(p.answer) for p in parts) + len(parts) - 1
        assert a.label == int(any(p.label for p in parts))
        assert all(p.context in a.context for p in parts)  # each part stays grounded
    assert 0 < sum(a.label for a in answers) < len(answers)


def test_the_hard_cases_fitted_on_are_the_train_part_built_as_the_test_part_is_scored() -> None:
    from lab.training.rag_features import DATASETS, HARD_CASES, hard_case_examples, load_examples
    from lab.training.train_evidence import _hard_cases

    # only the train part is a data set a map can be fitted on
    assert HARD_CASES in DATASETS and "hardcases_test" not in DATASETS
    fitted = load_examples(HARD_CASES)
    assert [e.id for e in fitted] == [c.uid for c in _hard_cases("train")]
    test_ids = {c.uid for c in _hard_cases("test")}
    assert test_ids and not test_ids & {e.id for e in fitted}
    # each input is the one benchmarks/bench_rules.py scores for a record
    for example, case in zip(
        hard_case_examples("test")[:40], _hard_cases("test")[:40], strict=True
    ):
        item = example.to_input()
        expected = DetectionInput.create(
            context=[p for p in case.context.split("\n") if p.strip()],
            question=case.question or None,
            answer=case.answer,
        )
        assert item == expected
        assert example.hallucinated == bool(case.label)
        assert example.task_type == case.source.split("/")[-1]


def test_candidate_5_weighs_the_hard_cases_as_much_as_the_rag_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lab.training import rag_response
    from truthlens_integrations._lab_api import ResponseSignals
    from truthlens_integrations._lab_api import calibration_fit_module as _response_fit

    rng = random.Random(5)
    rag = [ResponseSignals(rng.random(), rng.randint(1, 9), rng.randint(0, 6)) for _ in range(30)]
    rag_y = np.array([float(s.absent_words > 2) for s in rag])
    hard = [ResponseSignals(rng.random(), 1, rng.randint(0, 2)) for _ in range(90)]
    short = rag_response.Short(hard, np.array([float(s.max_probability > 0.5) for s in hard]))
    seen: list[list[float]] = []
    real_fit = _response_fit.fit_response_map

    def spy(*args: object, **kwargs: object) -> ResponseCalibration:
        seen.append(list(kwargs.get("weights") or []))  # type: ignore[call-overload]
        return real_fit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_response_fit, "fit_response_map", spy)
    fitted = rag_response.fit_candidate("short", rag, rag_y, short)
    weights = seen[-1]
    assert sum(weights[:30]) == pytest.approx(sum(weights[30:])) and weights[0] == 1.0
    rag_response.fit_candidate("short", rag, rag_y, short, short_weight=0.2)
    assert sum(seen[-1][30:]) == pytest.approx(0.2 * 30)
    assert fitted.length_safe and fitted.rule_floor == 0.0
    floored = rag_response.fit_candidate("short_floor", rag, rag_y, short)
    assert floored.rule_floor == rag_response.RULE_FLOOR
    assert rag_response.fitted_on("short").startswith(rag_response.FITTED_ON.split(",")[0])
    assert "hardcases_train" in rag_response.fitted_on("short")
    assert "hardcases" not in rag_response.fitted_on("rules")
    with pytest.raises(ValueError, match="hard cases"):
        rag_response.fit_candidate("short", rag, rag_y)
