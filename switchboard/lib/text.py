"""UTF-8 byte caps and character hygiene for text that agents and webhooks send."""

from __future__ import annotations

import unicodedata


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


def strip_control(text: str) -> str:
    """Remove control characters (Unicode category Cc: C0, DEL, C1), tabs and newlines included."""
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cc")


def has_control_or_space(text: str) -> bool:
    return any(ch.isspace() or unicodedata.category(ch) in ("Cc", "Cf") for ch in text)
