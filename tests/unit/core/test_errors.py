"""Tests of ``core/_errors.py``: the one error hierarchy."""

from __future__ import annotations

from truthlens_integrations.core import InvalidArgumentError, TruthLensError, UnknownArgumentError


def test_typed_errors_share_the_base() -> None:
    assert issubclass(UnknownArgumentError, InvalidArgumentError)
    assert issubclass(InvalidArgumentError, TruthLensError)


def test_every_public_error_of_the_core_is_a_truthlens_error() -> None:
    import truthlens_integrations.core as core

    errors = [
        getattr(core, name)
        for name in core.__all__
        if isinstance(getattr(core, name), type) and issubclass(getattr(core, name), Exception)
    ]
    assert core.JSONFormatError in errors  # it stood outside the hierarchy
    assert all(issubclass(e, TruthLensError) for e in errors), errors
    assert issubclass(core.JSONFormatError, ValueError)  # generic handlers keep working
