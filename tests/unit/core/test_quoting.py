"""Tests of ``core/_quoting.py``: outside text as an error message may quote it."""

from __future__ import annotations

import pytest

from truthlens_integrations.core._quoting import QUOTE_LIMIT, printable, quoted, redacted_url


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain text", "plain text"),
        ("red \x1b[31mtext", "red \\x1b[31mtext"),
        ("line\nERROR forged", "line\\nERROR forged"),
        ("bell\x07 tab\t cr\r nul\x00", "bell\\x07 tab\\t cr\\r nul\\x00"),
        ("zero\u200bwidth \u202eoverride \u2028sep", "zero\\u200bwidth \\u202eoverride \\u2028sep"),
        ("private \U000f0000 use", "private \\U000f0000 use"),
        ("Ünïcödé 東京 ok", "Ünïcödé 東京 ok"),
        ("see http://u:pw@host:1/v1 now", "see http://***@host:1/v1 now"),
        ("https://token@host/x", "https://***@host/x"),
        (ValueError("boom\x1b"), "boom\\x1b"),
    ],
)
def test_quoted_escapes_and_redacts(text: object, shown: str) -> None:
    assert quoted(text) == shown


@pytest.mark.parametrize("size", [QUOTE_LIMIT + 1, 10_000, 2_000_000])
@pytest.mark.parametrize("char", ["A", "\x1b", "\U000f0000"])
def test_quoted_is_bounded_and_says_how_much_was_cut(size: int, char: str) -> None:
    shown = quoted(char * size)
    assert shown.endswith(f"... (cut, {size} characters in all)")
    assert len(shown) <= QUOTE_LIMIT + 40
    assert printable(shown)


def test_quoted_does_not_show_a_password_whose_url_is_cut() -> None:
    text = "x" * 500 + "http://admin:" + "p" * 1000 + "@host"
    assert "p" not in quoted(text, limit=550).replace("http", "").replace("(cut", "")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://localhost:8000/v1", "http://localhost:8000/v1"),
        ("http://admin:hunter2@localhost:8000/v1", "http://***@localhost:8000/v1"),
        ("https://sk-secret@gw.example/v1", "https://***@gw.example/v1"),
        ("https://h/v1?api-version=2024&api_key=s1", "https://h/v1?api-version=2024&api_key=***"),
        ("https://h/v1?token=s1&sig=s2", "https://h/v1?token=***&sig=***"),
        ("http://h/\x1b[2J", "http://h/\\x1b[2J"),
        (None, "(none)"),
    ],
)
def test_redacted_url(url: str | None, shown: str) -> None:
    assert redacted_url(url) == shown


def test_printable() -> None:
    assert printable("Qwen/Qwen2.5-0.5B-Instruct:latest")
    assert not printable("m\u200b")
    assert not printable("m\n")
