"""Every package's ``__all__`` is pinned: a public name is added or removed on purpose.

The pinned lists are in ``tests/data/public_api.json``. After a deliberate change to a
package's public names, update that file (and say so in the change's notes).
"""

from __future__ import annotations

import importlib
import json

import pytest

from tests._paths import DATA
from tests.project.test_layout import PACKAGES, ROOT

PINNED: dict[str, list[str]] = json.loads((DATA / "public_api.json").read_text(encoding="utf-8"))


def _public_packages() -> set[str]:
    found = set()
    for folder, package in PACKAGES.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            if not any(part.startswith("_") for part in parts):
                found.add(".".join([package, *parts]))
    return found


def test_every_public_package_is_pinned() -> None:
    assert _public_packages() == set(PINNED)


def test_the_public_surface_stays_small() -> None:
    # what users import; the adapters' needs are in core/_adapter_api.py (docs/development.md)
    # 210: the design's defence layers (issue 52) took it past the 200 of issue 42;
    # 225: the claim checkers' contract and backends (issue 48)
    assert sum(len(names) for names in PINNED.values()) <= 225


@pytest.mark.parametrize("package", sorted(PINNED))
def test_all_is_pinned(package: str) -> None:
    module = importlib.import_module(package)
    assert len(module.__all__) == len(set(module.__all__)), "a name is listed twice"
    assert sorted(module.__all__) == PINNED[package]


@pytest.mark.parametrize("package", sorted(PINNED))
def test_every_listed_name_resolves(package: str) -> None:
    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing


def test_the_verdicts_check_report_has_one_name() -> None:
    # Two classes were both called Coverage: the detector's (what the model scored) and
    # the verdict's group (whether the guard checked the answer). The second is CheckReport.
    from truthlens_integrations.core import Coverage as DetectorCoverage
    from truthlens_integrations.core import engine

    assert not hasattr(engine, "Coverage")
    assert engine.CheckReport is not DetectorCoverage
    assert engine.Verdict.model_fields["coverage"].annotation is engine.CheckReport
