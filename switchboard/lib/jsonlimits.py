"""What JSON may enter: depth, numbers and strings that PostgreSQL and MCP can carry back out.

One check for every place JSON comes in (webhook bodies, MCP arguments, the lifecycle's jsonb
parameters, the Board's rule forms), so a value accepted at one door can always be stored and
answered at the others. jsonb holds no NUL and no lone surrogate, JSON has no ``NaN`` or
``Infinity`` (``1e400`` parses to one), and a value nested past a few hundred levels cannot be
encoded into an MCP answer: a todo whose claim could not be answered would be leased to nobody.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64  # containers inside containers; an MCP answer wraps a payload a few levels deeper


class NotAcceptedJson(ValueError):
    """Text or a value that is not JSON the system accepts; the message says why."""


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "contains NUL characters, which cannot be stored"
    # isprintable() is False for every surrogate (category Cs): only then is the scan needed.
    if not text.isprintable() and any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return "contains a lone surrogate, which is not valid Unicode"
    return None


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored as PostgreSQL text (NUL, lone surrogate), or None."""
    return _text_problem(text)


def problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """Why ``value`` (decoded JSON) may not enter, or None: nested deeper than ``max_depth``,
    a non-finite number, or a string (key or value) with a NUL or a lone surrogate.

    Iterative, so a value nested far past the interpreter's recursion limit is measured too.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            if (reason := _text_problem(item)) is not None:
                return reason
        elif isinstance(item, float):
            if not math.isfinite(item):
                return "contains a number that is not finite (NaN, Infinity or out of range)"
        elif isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                return f"is nested more than {max_depth} levels deep"
            if isinstance(item, dict):
                for key, child in item.items():
                    stack.append((key, depth + 1))
                    stack.append((child, depth + 1))
            else:
                stack.extend((child, depth + 1) for child in item)
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """``text`` as JSON that passes ``problem``, or ``NotAcceptedJson`` saying why."""
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise NotAcceptedJson(f"is nested more than {max_depth} levels deep") from None
    except ValueError as exc:
        raise NotAcceptedJson(f"is not JSON: {exc}") from None
    if (reason := problem(value, max_depth)) is not None:
        raise NotAcceptedJson(reason)
    return value
