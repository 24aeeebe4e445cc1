"""Keyset cursors as opaque text: the one encoding the todo list's, the Activity feed's and a
source's events' cursors share (``todos/filters.py``, ``activity/feed.py``,
``todos/intake/source_views.py``).

A cursor is the keyset of the last row a page showed, a short JSON list, sent as unpadded
base64url so it travels in a URL and MCP's ``next_cursor`` alike. Each cursor type checks its
own values after ``decode``: anything a client sends back may have been made up.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from collections.abc import Sequence
from typing import Any


def encode(values: Sequence[Any]) -> str:
    """``values`` (JSON-able, times through ``stamp``) as opaque text."""
    raw = json.dumps(list(values), separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).rstrip(b"=").decode()


def decode(text: str, max_chars: int | None = None) -> list[Any] | None:
    """The list ``text`` encodes, or None when it is no cursor ``encode`` made (too long, not
    base64url, not JSON, not a list)."""
    if not text or (max_chars is not None and len(text) > max_chars):
        return None
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError):  # UnicodeDecodeError and JSONDecodeError included
        return None
    return value if isinstance(value, list) else None


def stamp(moment: dt.datetime) -> str:
    """A time for a cursor: UTC with its microseconds, which a keyset needs."""
    return moment.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def parse_stamp(text: Any) -> dt.datetime | None:
    """The time ``stamp`` wrote, or None for anything else (a naive time included)."""
    if not isinstance(text, str):
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
