"""UTF-8 byte caps and character hygiene for text that agents and webhooks send, and sums of
money as people read them."""

from __future__ import annotations

import argparse
import unicodedata
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

# Sums in USD: cents, and below a cent this many places (``money``).
CENT = Decimal("0.01")
SMALLEST = Decimal("0.0001")


def whole_number(text: str, max_digits: int = 18) -> int | None:
    """``text`` as a whole number when it is 1 to ``max_digits`` ASCII digits, else None.

    For text from outside (a header, a form, an attribute): ``str.isdigit`` also passes digits
    ``int`` refuses (``"²"``), and ``int`` refuses more than 4,300 digits, so a check of either
    alone lets a ``ValueError`` through."""
    if 0 < len(text) <= max_digits and text.isascii() and text.isdigit():
        return int(text)
    return None


def signed_whole_number(text: str, max_digits: int = 18) -> int | None:
    """``whole_number`` with an optional leading ``-`` (once: ``--1`` is None)."""
    number = whole_number(text.removeprefix("-"), max_digits)
    if number is None:
        return None
    return -number if text.startswith("-") else number


def integer_argument(text: str) -> int:
    """A command-line option's whole number (argparse's ``type=``): ASCII digits with an
    optional sign, as the Board's forms read them; ``int`` also takes ``٣``, ``1_0`` and
    spaces."""
    number = signed_whole_number(text)
    if number is None:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {text!r}")
    return number


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


def money(value: Any) -> str:
    """A sum in USD as people read it: cents from a cent up (``$0.14``, ``$1,250.00``), and
    below a cent up to four decimals without trailing zeros (``$0.005``, ``$0.0012``), so a
    small budget's figures do not all read ``$0.00``; ``<$0.0001`` below that. Rows store the
    exact figure (``0.144000000000``, as text in a JSON detail); text that is no number is
    shown as it is."""
    try:
        amount = Decimal(str(value))
    except ArithmeticError:
        return f"${value}"
    if not amount.is_finite():
        return f"${value}"
    sign, amount = ("-", -amount) if amount < 0 else ("", amount)
    if amount == 0 or amount >= CENT:
        return f"{sign}${amount.quantize(CENT, ROUND_HALF_UP):,}"
    small = amount.quantize(SMALLEST, ROUND_HALF_UP)
    if small == 0:
        return f"{sign}<${SMALLEST}"
    return f"{sign}${small.normalize():f}"


def money_sql(expr: str) -> str:
    """``money``'s text as a SQL expression over ``expr``, a non-negative numeric: for a
    statement that writes words people read (an attempt's summary, todos/sql/over_cap.sql), so
    they say ``$0.50``, not ``0.500000``. ``expr`` is SQL the caller wrote, never input."""
    return (
        f"(CASE WHEN ({expr}) = 0 OR ({expr}) >= {CENT}"
        f" THEN '$' || to_char(round(({expr}), 2), 'FM999,999,999,999,999,999,990.00')"
        f" WHEN round(({expr}), 4) = 0 THEN '<${SMALLEST}'"
        f" ELSE '$' || trim_scale(round(({expr}), 4))::text END)"
    )


def spent(cost: Decimal, unpriced_tokens: int) -> str:
    """What was spent, for a table's cell: ``money`` of it, ``unpriced`` when only calls no
    price covers were made (never $0.00 for tokens nobody priced), ``—`` when none were."""
    if not cost:
        return "unpriced" if unpriced_tokens else "—"
    return money(cost)
