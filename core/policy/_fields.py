"""The field types and the strict base every model of a policy file is built from."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, Strict

__all__ = [
    "DEFAULT_WARNING_TEMPLATE",
    "Backend",
    "Budget",
    "ConditionType",
    "Flag",
    "Iterations",
    "Mode",
    "Name",
    "Operator",
    "Precision",
    "StrictModel",
    "Unit",
]

Mode = Literal["lightweight", "standard", "premium"]
Operator = Literal["AND", "OR"]
Precision = Literal["auto", "float32", "bfloat16", "float16", "int8"]
Backend = Literal["auto", "torch", "onnx"]
ConditionType = Literal["domain", "keyword", "fact_check"]

DEFAULT_WARNING_TEMPLATE = (
    "⚠️ Note: this response may contain information the provided context does not "
    "support. Please verify key facts before acting on it."
)


def _unit_interval(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValueError("must be between 0 and 1")
    return value


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


# Numbers and switches are strict: YAML `response_threshold: true` or `"0.3"` is an
# error, not 1.0 or 0.3. A lax `true` read as threshold 1.0 silently turns detection off.
# Integers are still accepted where a float is expected (`response_threshold: 1`).
Unit = Annotated[float, Strict(), AfterValidator(_unit_interval)]
Name = Annotated[str, AfterValidator(_non_blank)]
Iterations = Annotated[int, Strict(), Field(ge=0, le=100)]
Budget = Annotated[float, Strict(), Field(gt=0.0, le=3600.0)]
Flag = Annotated[bool, Strict()]


class StrictModel(BaseModel):
    """A policy block: unknown keys, NaN and infinities refused; frozen."""

    # NaN and infinities are refused everywhere: `time_budget_s: .nan` is not a budget.
    model_config = ConfigDict(
        extra="forbid", frozen=True, populate_by_name=True, allow_inf_nan=False
    )
