"""What ships and what users read names no lab step and no path the package does not have.

The model lab (``lab/``) names its steps by the ids they had while they were measured
("candidate 27c", "stage 6", "round 2") and keeps its scripts and records in folders the
wheel does not ship. The product's code and docstrings, the shipped model folders and the
user docs say the behaviour instead, with the test that pins it and a model version
("detector v2.0"). Links and repository paths in the docs point at files that exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests._paths import REPO

ROOT = REPO
PRODUCT = ("core", "langchain_adapter", "llamaindex_adapter", "truthlens_integrations")
BUNDLED = ROOT / "core" / "_bundled"
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# "candidate 27c", "Stage 6", "round-2", "candidates 9 and 11", "stage6"; not "--rounds 5"
# (a benchmark's option) and not the engine's named pipeline stages ("classifier").
LAB_ID = re.compile(r"(?<![\w-])(candidates?|stages?|rounds?)[ _-]?\d+[a-z]?\b", re.IGNORECASE)
# a design document that is not in the repository: "design section 5.4", "(§3.1.4)"
DESIGN_SECTION = re.compile(r"§|\bdesign('s)?\s+(section\s+|table\s+)?\d", re.IGNORECASE)
# paths and modules the wheel does not ship
NOT_SHIPPED = re.compile(
    r"(?<![\w./-])(training|benchmarks)/|\blab[./](training|records|journal)\b|RULE_candidate"
)
TEST_FILE = re.compile(r"\btests/((?:\w+/)*test_\w+\.py)\b")
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"`((?:benchmarks|lab|docs|core|tests|scripts|cookbook)/[^`\s]*)`")


def _product_files() -> list[Path]:
    files = [p for folder in PRODUCT for p in sorted((ROOT / folder).rglob("*.py"))]
    files += [
        p
        for p in sorted(BUNDLED.rglob("*"))
        if p.is_file() and p.suffix in {".md", ".json"} and p.name != "tokenizer.json"
    ]
    return files


def _hits(pattern: re.Pattern[str], files: list[Path]) -> list[str]:
    return [
        f"{path.relative_to(ROOT)}:{n}: {match.group(0)!r} in {line.strip()[:90]!r}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in pattern.finditer(line)
    ]


def test_the_patterns_find_what_they_are_for() -> None:
    for text in ("since candidate 32", "Stage 6 weights", "round-2", "candidates 9 and", "stage6"):
        assert LAB_ID.search(text), text
    for text in ("--rounds 5", "the routing stage", "a second round of", "backstage 4"):
        assert not LAB_ID.search(text), text
    assert DESIGN_SECTION.search("(design section 5.4)") and DESIGN_SECTION.search("§3.1.4")
    assert not DESIGN_SECTION.search("RFC 8259, section 8.1")
    for text in (
        "(training/span_cut.py)",
        "benchmarks/results/x.md",
        "lab/records/a",
        "lab.training.x",
    ):
        assert NOT_SHIPPED.search(text), text
    assert not NOT_SHIPPED.search("pre-training/fine-tuning and lab/README.md")


@pytest.mark.parametrize(
    "pattern", [LAB_ID, DESIGN_SECTION, NOT_SHIPPED], ids=["ids", "design", "paths"]
)
def test_product_code_and_shipped_models_name_no_lab_step_or_path(pattern: re.Pattern[str]) -> None:
    found = _hits(pattern, _product_files())
    assert not found, "\n".join(found)


def test_user_docs_name_no_lab_step() -> None:
    found = _hits(LAB_ID, USER_DOCS) + _hits(DESIGN_SECTION, USER_DOCS)
    assert not found, "\n".join(found)


def test_the_tests_product_code_points_to_exist() -> None:
    named = {m.group(1) for f in _product_files() for m in TEST_FILE.finditer(f.read_text())}
    assert named, "the rules' comments name the tests that pin them"
    missing = sorted(n for n in named if not (ROOT / "tests" / n).is_file())
    assert not missing, missing


def test_the_detector_has_a_version_users_can_read() -> None:
    import json

    config = json.loads((BUNDLED / "detector" / "config.json").read_text(encoding="utf-8"))
    version = config["truthlens"]["model_version"]
    assert re.fullmatch(r"detector v\d+\.\d+", version)
    assert version in (BUNDLED / "detector" / "README.md").read_text(encoding="utf-8")


def _anchors(page: Path) -> set[str]:
    """The heading anchors GitHub gives a page ("## The opt-in `rag`" -> "the-opt-in-rag")."""
    found: set[str] = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if heading := re.match(r"#{1,6}\s+(.*)", line):
            found.add(re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", [*USER_DOCS, ROOT / "CHANGELOG.md"], ids=lambda p: p.name)
def test_doc_links_and_repository_paths_exist(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for link in MD_LINK.findall(text):
        target, _, anchor = link.partition("#")
        if re.match(r"[a-z]+:", target):
            continue
        path = page.parent / target if target else page
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(link)
    for path in REPO_PATH.findall(text):
        clean = path.rstrip(".,;:)")
        if "{" in clean or "NAME" in clean or "X" in clean.split("/")[-1]:
            continue  # a pattern, not a path
        if not (any(ROOT.glob(clean)) if "*" in clean else (ROOT / clean).exists()):
            broken.append(clean)
    assert not broken, broken
