"""UTF-8 byte caps and character hygiene for text that agents and webhooks send."""

from __future__ import annotations

import unicodedata
from typing import Any


def whole_number(text: str, max_digits: int = 18) -> int | None:
    """``text`` as a whole number when it is 1 to ``max_digits`` ASCII digits, else None.

    For text from outside (a header, a form, an attribute): ``str.isdigit`` also passes digits
    ``int`` refuses (``"²"``), and ``int`` refuses more than 4,300 digits, so a check of either
    alone lets a ``ValueError`` through."""
    if 0 < len(text) <= max_digits and text.isascii() and text.isdigit():
        return int(text)
    return None


def cut_utf8(text: str, max_bytes: int) -> tuple[str, bool]:
    """Cut ``text`` to at most ``max_bytes`` of UTF-8, at the last complete character.

    Returns the text and whether anything was cut.
    """
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text, False
    # errors="ignore" drops the partial character left at the cut, and nothing else.
    return encoded[:max_bytes].decode("utf-8", errors="ignore"), True


def strip_nul(text: str) -> str:
    """Remove NUL characters, which PostgreSQL text cannot hold."""
    return text.replace("\x00", "")


def has_nul(value: Any) -> bool:
    """Whether a NUL sits in any string (key or value) of a JSON-able ``value``: jsonb cannot
    hold one, and its text form ``\\u0000`` is only a hint (an escaped backslash looks alike)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(has_nul(k) or has_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(has_nul(v) for v in value)
    return False


def strip_control(text: str) -> str:
    """Remove control characters (Unicode category Cc: C0, DEL, C1), tabs and newlines included."""
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cc")


def has_control_or_space(text: str) -> bool:
    return any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)
