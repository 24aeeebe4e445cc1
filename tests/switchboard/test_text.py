"""switchboard/lib/text.py: whole numbers read from text that comes from outside."""

from __future__ import annotations

import pytest

from switchboard.lib.text import whole_number
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
