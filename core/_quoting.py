"""Outside text as an error message or a log line may show it: bounded, escaped, no secrets.

An error that quotes what a server answered, a URL from the environment or another
library's exception must not carry that text raw: a server can answer two megabytes, a
terminal escape that repaints the screen, or a fake log line after a line break; a base
URL can hold a password (``http://user:secret@host/v1``). Every message that quotes text
from outside the package goes through :func:`quoted`, and every URL through
:func:`redacted_url`: one rule, one owner.
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["QUOTE_LIMIT", "printable", "quoted", "redacted_url"]

QUOTE_LIMIT = 300
"""Characters of outside text an error message shows at most (escapes counted)."""

_REDACTED = "***"
# Unicode categories that do not print as themselves: controls, format characters
# (bidirectional overrides, zero-width spaces), surrogates, private use, unassigned,
# and the line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# Query parameters that carry credentials (``?api_key=...``, ``&sig=...``).
_SECRET_PARAM = re.compile(r"key|token|secret|passw|pwd|sig|auth|credential", re.IGNORECASE)
# The user information of a URL written inside a text: ``scheme://user:password@``.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@]*@")
_OPEN_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/@]*\Z")


def quoted(text: object, *, limit: int = QUOTE_LIMIT) -> str:
    r"""``text`` as a message may quote it: secrets redacted, hidden characters escaped, bounded.

    Credentials in any URL inside it become ``***``; a character that does not print as
    itself (a control such as ESC or a line break, a format character such as U+200B or
    a bidirectional override) is written as its escape (``\x1b``, ``\u200b``); past
    ``limit`` characters the rest is cut and counted. Only the first few ``limit``
    characters are read, so a two-megabyte answer costs nothing.

    Args:
        text: The outside text (anything else is read as its ``str``).
        limit: The most characters shown, escapes included.

    Returns:
        The text to put in the message (without surrounding quotes).
    """
    raw = text if isinstance(text, str) else str(text)
    # Read a little more than the limit: redaction may shorten it, escapes lengthen it.
    window = limit * 2 + 64
    head = _USERINFO.sub(rf"\1{_REDACTED}@", raw[:window])
    if len(raw) > window:  # a URL cut before its "@" may still be a password
        head = _OPEN_USERINFO.sub(rf"\1{_REDACTED}", head)
    shown: list[str] = []
    used = 0
    for char in head:
        piece = _escaped(char)
        if used + len(piece) > limit:
            return "".join(shown) + _cut(len(raw))
        shown.append(piece)
        used += len(piece)
    return "".join(shown) + (_cut(len(raw)) if len(raw) > window else "")


def printable(text: str) -> bool:
    """Whether every character of ``text`` prints as itself (what :func:`quoted` escapes).

    Args:
        text: The text.

    Returns:
        ``False`` if it holds a control, format, private-use or unassigned character
        or a line break.
    """
    return not any(unicodedata.category(char) in _HIDDEN for char in text)


def redacted_url(url: str | None) -> str:
    """A URL as a message may show it: no user, password or credential query parameter.

    Args:
        url: The URL (``None`` reads as ``"(none)"``).

    Returns:
        The URL with its user information replaced by ``***`` and the values of query
        parameters named like credentials (``api_key``, ``token``, ``sig`` ...) too;
        then :func:`quoted`.
    """
    if url is None:
        return "(none)"
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL at all: quote it, redacting what looks like userinfo
        return quoted(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{_REDACTED}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, _REDACTED if _SECRET_PARAM.search(k) else v) for k, v in pairs], safe="*"
        )
    return quoted(urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment)))


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    if unicodedata.category(char) not in _HIDDEN:
        return char
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _cut(total: int) -> str:
    return f"... (cut, {total} characters in all)"
