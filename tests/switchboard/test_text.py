"""switchboard/lib/text.py: whole numbers read from text that comes from outside."""

from __future__ import annotations

from decimal import Decimal

import pytest

from attempts.types import Usage
from switchboard.lib.text import spent, whole_number
from todos.intake.routing import lookup


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("42", 42), ("0042", 42), ("9" * 18, int("9" * 18))],
)
def test_ascii_digits_are_a_whole_number(text: str, expected: int) -> None:
    assert whole_number(text) == expected


@pytest.mark.parametrize(
    "text",
    # "²" and "٣" pass str.isdigit and int refuses the first; 5,000 digits int refuses too.
    ["", "-1", "+1", " 1", "1.0", "\u00b2", "\u0663", "1" * 19, "1" * 5000],
)
def test_anything_else_is_none(text: str) -> None:
    assert whole_number(text) is None


def test_a_routing_path_reads_list_indexes_as_ascii_digits_only() -> None:
    document = {"items": ["a", "b"]}
    assert lookup(document, "items.1") == "b"
    assert lookup(document, "items.\u00b2") is lookup(document, "items.9")  # missing, no error


@pytest.mark.parametrize(
    ("cost", "unpriced", "shown"),
    [
        (Decimal("1.2345"), 0, "$1.23"),
        (Decimal("1250.5"), 0, "$1,250.50"),
        (Decimal("0.005"), 0, "$0.005"),
        (Decimal("0.00001"), 0, "<$0.0001"),
        (Decimal(0), 40, "unpriced"),
        (Decimal(0), 0, "—"),
        (Decimal("0.0123"), 40, "$0.01"),
    ],
)
def test_every_cost_on_the_board_reads_one_way(cost: Decimal, unpriced: int, shown: str) -> None:
    """The Overview's and the fleet's cells (``spent``) and a todo's or attempt's cost
    (``Usage.cost_label``) read as ``money`` does: cents from a cent up, a sub-cent sum to four
    decimals, never $0.00 for tokens nobody priced."""
    assert spent(cost, unpriced) == shown
    if shown != "—":  # a todo with tokens always shows a cost or "unpriced"
        assert Usage(input_tokens=10, unpriced_tokens=unpriced, cost_usd=cost).cost_label() == shown
