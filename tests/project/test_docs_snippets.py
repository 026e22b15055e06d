"""Every ```python block of the README and of docs/*.md runs as written.

Each block runs alone, in a fresh namespace, in a temporary working directory, with
sockets off and no hosted-LLM settings: what a user gets by copying one block into a
script. LLMs in the blocks are scripted (``truthlens_integrations.testing`` or
LangChain's / LlamaIndex's own fakes); the bundled models are the real ones.

A block that cannot run here is marked by an HTML comment on the line before it (blank
lines between are allowed):

- ``<!-- snippet: skip REASON -->``: never run; the reason is required.

What a block prints is checked too: a comment on the line of a ``print(...)`` call
states its output, and the output must match it (see docs/development.md):

- the comment, up to an optional `` -- note``, is the expected output, whole;
- ``...`` in it stands for any text (as in doctest's ELLIPSIS), newlines included;
- every output of that call (each pass of a loop) must match; a call that never
  prints fails, as a stated output that was never shown is not checked.

A ``print`` without a comment is not compared.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._paths import REPO

ROOT = REPO
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 300

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


_CHECKED_PRINT = "__snippet_print__"
_NOTE = " -- "


def stated_outputs(code: str) -> dict[int, str]:
    """The output each commented ``print`` line states: {line: claim}."""
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT:
            claim = token.string[1:].strip().split(_NOTE, 1)[0].strip()
            comments[token.start[0]] = claim
    lines: dict[int, str] = {}
    for node in ast.walk(ast.parse(code)):
        if _is_print(node) and node.end_lineno in comments:
            assert node.end_lineno is not None
            lines[node.end_lineno] = comments[node.end_lineno]
    return lines


def _is_print(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "print"
    )


class _RoutePrints(ast.NodeTransformer):
    """Sends the commented ``print`` calls through the recorder, with their line."""

    def __init__(self, lines: set[int]) -> None:
        self.lines = lines

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        if _is_print(node) and node.end_lineno in self.lines:
            call = node.value
            assert isinstance(call, ast.Call)
            call.func = ast.Name(_CHECKED_PRINT, ast.Load())
            call.args.insert(0, ast.Constant(node.end_lineno))
        return self.generic_visit(node)


def matches(claim: str, printed: str) -> bool:
    """Whether ``printed`` is what ``claim`` states (``...`` is any text).

    Runs of whitespace compare equal to one space: a comment is one line, an output
    may be several.
    """
    parts = [re.escape(" ".join(part.split())) for part in claim.split("...")]
    pattern = r"\s*.*?\s*".join(parts)
    return re.fullmatch(pattern, " ".join(printed.split()), flags=re.DOTALL) is not None


def run_snippet(code: str, name: str) -> tuple[dict[int, str], dict[int, list[str]]]:
    """Run ``code``; the outputs it states and what each commented print printed."""
    stated = stated_outputs(code)
    tree = ast.fix_missing_locations(_RoutePrints(set(stated)).visit(ast.parse(code)))
    printed: dict[int, list[str]] = {line: [] for line in stated}

    def recorder(line: int, *args: object, **kwargs: object) -> None:
        kwargs.pop("file", None)
        buffer = io.StringIO()
        print(*args, file=buffer, **kwargs)  # type: ignore[call-overload]
        print(buffer.getvalue(), end="")
        printed[line].append(buffer.getvalue())

    namespace: dict[str, object] = {"__name__": "__snippet__", _CHECKED_PRINT: recorder}
    exec(compile(tree, name, "exec"), namespace)
    return stated, printed


def wrong_outputs(stated: dict[int, str], printed: dict[int, list[str]]) -> list[str]:
    """One line per commented print whose output is not what its comment states."""
    wrong: list[str] = []
    for line, claim in sorted(stated.items()):
        outputs = printed[line]
        if not outputs:
            wrong.append(f"line {line}: states {claim!r} but never printed")
        wrong += [
            f"line {line}: states {claim!r}, printed {out.strip()!r}"
            for out in outputs
            if not matches(claim, out)
        ]
    return wrong


def test_the_output_check_compares_what_is_printed() -> None:
    code = (
        "print('MITIGATE', 0.92)  # MITIGATE 0.92 -- the decision\n"
        "print('x')  # y\n"
        "for word in ['a b', 'a c']:\n"
        "    print(word)  # a ...\n"
        "if False:\n"
        "    print('never')  # never\n"
        "print('free')\n"
    )
    with contextlib.redirect_stdout(io.StringIO()):
        stated, printed = run_snippet(code, "probe")
    assert stated == {1: "MITIGATE 0.92", 2: "y", 4: "a ...", 6: "never"}
    assert wrong_outputs(stated, printed) == [
        "line 2: states 'y', printed 'x'",
        "line 6: states 'never' but never printed",
    ]
    assert matches("The answer. ... Warning", "The answer.\n\nsome Warning")
    assert not matches("True", "True False")


@pytest.mark.parametrize("snippet", PYTHON, ids=[s.id for s in PYTHON])
def test_snippet_runs(snippet: Snippet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if snippet.kind == "skip":
        pytest.skip(snippet.reason)
    monkeypatch.chdir(tmp_path)
    for key in _HOSTED:
        monkeypatch.delenv(key, raising=False)
    stated, printed = run_snippet(snippet.code, snippet.id)
    wrong = wrong_outputs(stated, printed)
    assert not wrong, f"{snippet.id}: " + "; ".join(wrong)


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
