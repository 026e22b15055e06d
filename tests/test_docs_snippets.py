"""Every ```python block of the README and of docs/*.md runs as written.

Each block runs alone, in a fresh namespace, in a temporary working directory, with
sockets off and no hosted-LLM settings: what a user gets by copying one block into a
script. LLMs in the blocks are scripted (``truthlens_integrations.testing`` or
LangChain's / LlamaIndex's own fakes); the bundled models are the real ones.

A block that cannot run here is marked by an HTML comment on the line before it (blank
lines between are allowed):

- ``<!-- snippet: skip REASON -->``: never run; the reason is required.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 330  # the endpoint section (issue 43) added 28 lines

_MARKER = re.compile(r"^<!--\s*snippet:\s*(?P<kind>[\w-]+)\s*(?P<reason>.*?)\s*-->\s*$")
_KINDS = ("skip",)
_HOSTED = ("OPENAI_API_KEY", "OPENAI_BASE_URL")


@dataclass(frozen=True)
class Snippet:
    """One fenced block of a page."""

    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    kind: str | None  # the marker before it, if any
    reason: str

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


@dataclass(frozen=True)
class Marker:
    """A snippet marker and the line it is on."""

    page: Path
    line: int
    kind: str
    reason: str


def read_page(page: Path) -> tuple[list[Snippet], list[Marker]]:
    """The fenced blocks of ``page`` and every snippet marker in it."""
    lines = page.read_text(encoding="utf-8").splitlines()
    snippets: list[Snippet] = []
    markers: list[Marker] = []
    pending: Marker | None = None
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        found = _MARKER.match(text)
        if found:
            pending = Marker(page, i + 1, found["kind"], found["reason"])
            markers.append(pending)
        elif text.startswith("```") and len(text) > 3:
            language, start, body = text[3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            kind = pending.kind if pending else None
            reason = pending.reason if pending else ""
            snippets.append(Snippet(page, start, language, "\n".join(body) + "\n", kind, reason))
            pending = None
        elif text:
            pending = None  # a marker applies to the block right after it
        i += 1
    return snippets, markers


def _all() -> tuple[list[Snippet], list[Marker]]:
    snippets: list[Snippet] = []
    markers: list[Marker] = []
    for page in PAGES:
        found, marks = read_page(page)
        snippets += found
        markers += marks
    return snippets, markers


SNIPPETS, MARKERS = _all()
PYTHON = [s for s in SNIPPETS if s.language == "python"]


def test_readme_is_a_short_guide() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < README_MAX_LINES


def test_the_guide_has_python_blocks_on_every_page() -> None:
    pages = {s.page for s in PYTHON}
    missing = [
        p.name
        for p in PAGES
        if p not in pages and p.name not in ("journal.md", "evaluate.md", "results.md")
    ]
    assert not missing


def test_markers_are_known_and_apply_to_a_python_block() -> None:
    marked = {(s.page, s.kind, s.reason) for s in PYTHON if s.kind}
    for marker in MARKERS:
        where = f"{marker.page.name}:{marker.line}"
        assert marker.kind in _KINDS, f"{where}: unknown snippet marker {marker.kind!r}"
        if marker.kind == "skip":
            assert marker.reason, f"{where}: a skipped snippet says why"
        assert (marker.page, marker.kind, marker.reason) in marked, (
            f"{where}: the marker is not right before a python block"
        )


def test_the_reader_sees_markers_and_blocks(tmp_path: Path) -> None:
    page = tmp_path / "probe.md"
    text = (
        "intro\n\n<!-- snippet: skip needs a server -->\n\n```python\nx = 1\n```\n"
        "```bash\nls\n```\n<!-- snippet: skip no server -->\nprose\n```python\ny = 2\n```\n"
    )
    page.write_text(text, encoding="utf-8")
    snippets, markers = read_page(page)
    assert [(s.language, s.kind, s.reason, s.code) for s in snippets] == [
        ("python", "skip", "needs a server", "x = 1\n"),
        ("bash", None, "", "ls\n"),
        ("python", None, "", "y = 2\n"),  # prose between: the marker does not apply
    ]
    assert [m.kind for m in markers] == ["skip", "skip"]


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.id for s in PYTHON])
def test_snippet_runs(snippet: Snippet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if snippet.kind == "skip":
        pytest.skip(snippet.reason)
    monkeypatch.chdir(tmp_path)
    for key in _HOSTED:
        monkeypatch.delenv(key, raising=False)
    code = compile(snippet.code, snippet.id, "exec")
    exec(code, {"__name__": "__snippet__"})


_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_point_at_files(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    missing = [
        target
        for target, _ in _LINK.findall(text)
        if "://" not in target and not (page.parent / target).exists()
    ]
    assert not missing
