from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests._paths import REPO
from truthlens_integrations.core import MissingDependencyError
from truthlens_integrations.core._optional import require

ROOT = REPO
HEAVY = (
    "torch", "transformers", "langchain_core", "llama_index", "openai", "ray", "httpx",
    "py3langid", "confusable_homoglyphs",
)  # fmt: skip


def test_import_is_light() -> None:
    code = (
        "import sys, truthlens_integrations as t, truthlens_integrations.core.models.detection,"
        " truthlens_integrations.serve;"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_lazy_public_names_resolve() -> None:
    import truthlens_integrations as t

    assert callable(t.load_detector)
    assert "TransformerDetector" in dir(t)
    with pytest.raises(AttributeError):
        _ = t.not_a_name  # type: ignore[attr-defined]


def test_missing_extra_names_the_extra() -> None:
    with pytest.raises(MissingDependencyError) as info:
        require("surely_not_installed_pkg.sub", extra="langchain", feature="The adapter")
    assert isinstance(info.value, ImportError)
    assert "pip install 'truthlens-integrations[langchain]'" in str(info.value)


def test_wheel_has_one_top_level_package(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("truthlens_integrations-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {"truthlens_integrations"}
    assert "truthlens_integrations/core/models/detection/_transformer.py" in names
    assert "truthlens_integrations/py.typed" in names
    # the bundled models' weights, and the calibration package
    assert "truthlens_integrations/core/_bundled/detector/model.safetensors" in names
    assert "truthlens_integrations/core/_calibration/_map.py" in names
    # the ragtruth_dev split the evaluation readers read by default
    assert "truthlens_integrations/evaluation/ragtruth_dev_split.json" in names
    assert not any(n.startswith(("core/", "tests/", "lab/", "benchmarks/")) for n in names)
