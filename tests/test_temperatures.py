"""A temperature is one amount with its scale (issue 27, candidate 23)."""

from __future__ import annotations

import pytest

from truthlens_integrations.core._quantities import extract_quantities, measure
from truthlens_integrations.core.models.detection._adjust import _number_verdicts


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Reheat to 165°F.", (165.0, "fahrenheit", "165°F")),
        ("Bake at 350 ºF.", (350.0, "fahrenheit", "350 ºF")),
        ("Heat the oven to 375 degree F.", (375.0, "fahrenheit", "375 degree F")),
        ("Keep it at 20 degrees Celsius.", (20.0, "celsius", "20 degrees Celsius")),
        ("It was 1.5 °C warmer.", (1.5, "celsius", "1.5 °C")),
    ],
)
def test_a_temperature_is_one_quantity(text: str, expected: tuple[float, str, str]) -> None:
    found = extract_quantities(text)
    assert [(q.value, q.unit, text[q.start : q.end]) for q in found] == [expected]


def test_temperatures_are_compared_in_celsius() -> None:
    (fahrenheit,) = extract_quantities("165°F")
    assert measure(fahrenheit) == ("temperature", pytest.approx(73.889, abs=1e-3))
    # an angle or a bare "degrees" has no scale: read as before
    assert [q.unit for q in extract_quantities("Turn 90° left, then 30 degrees.")] == [
        None,
        "degree",
    ]


def test_a_conversion_is_found_and_another_temperature_conflicts() -> None:
    def verdicts(answer: str, context: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, [context])]

    safety = "Reheat leftovers to 165 degrees Fahrenheit before serving."
    assert verdicts("Reheat leftovers to 165°F (74°C).", safety) == [
        ("165°F", "present"),
        ("74°C", "present"),
    ]
    assert verdicts("Reheat leftovers to 145°F (63°C).", safety) == [
        ("145°F", "conflict"),
        ("63°C", "conflict"),
    ]
    # an oven's "190°C" is the usual rounding of 375 °F (190.6 °C)
    oven = "Heat the oven to 375 degree F and roast the meat."
    assert verdicts("Roast the meat at 190°C.", oven) == [("190°C", "present")]


def test_a_bare_degrees_in_the_context_counts_in_either_scale() -> None:
    context = ["Bake at 325 degrees, then reheat to 165 °F and keep cold food at 41 °F."]

    def verdicts(answer: str) -> list[tuple[str, str]]:
        return [(answer[s:e], v) for s, e, v in _number_verdicts(answer, context)]

    assert verdicts("Bake at 325°F (163°C).") == [("325°F", "present"), ("163°C", "present")]
    # a temperature the context states in no scale is still a conflict
    assert verdicts("Bake at 350°F.") == [("350°F", "conflict")]
