"""One rule's match inside another's (``routing.covers``), what ``create_rule`` warns about."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from todos.intake.routing import InvalidMatch, covers, evaluate, parse_match

CHECK_RUN = {"headers": {"X-GitHub-Event": "check_run"}}
FAILED = {
    "headers": {"X-GitHub-Event": "check_run"},
    "payload": {
        "action": "completed",
        "check_run.conclusion": {"in": ["failure", "timed_out"]},
        "repository.full_name": {"exists": True},
    },
}


@pytest.mark.parametrize(
    ("broad", "narrow"),
    [
        ({}, FAILED),  # the empty match takes every delivery
        (FAILED, FAILED),
        (CHECK_RUN, FAILED),  # a field broad does not test holds whatever narrow says
        ({"headers": {"x-github-event": "check_run"}}, CHECK_RUN),  # header names, any case
        ({"payload": {"a": {"in": ["x", "y"]}}}, {"payload": {"a": "x"}}),
        ({"payload": {"a": {"in": ["x", "y"]}}}, {"payload": {"a": {"in": ["y", "x"]}}}),
        ({"payload": {"a": {"in": ["x", "y"]}}}, {"payload": {"a": {"in": ["x", "z"], "ne": "z"}}}),
        ({"payload": {"a": {"exists": True}}}, {"payload": {"a": {"prefix": "v"}}}),
        ({"payload": {"a": {"exists": True}}}, {"payload": {"a": None}}),
        ({"payload": {"a": {"prefix": "v"}}}, {"payload": {"a": {"prefix": "v1"}}}),
        ({"payload": {"a": {"prefix": "v"}}}, {"payload": {"a": "v2"}}),
        ({"payload": {"a": {"ne": "x"}}}, {"payload": {"a": "y"}}),
        ({"payload": {"a": {"ne": "x"}}}, {"payload": {"a": {"exists": False}}}),
        ({"payload": {"a": {"ne": "x"}}}, {"payload": {"a": {"prefix": "y"}}}),
        (
            {"payload": {"a": {"not_in": ["x", "y"]}}},
            {"payload": {"a": {"not_in": ["y", "x", "z"]}}},
        ),
        ({"payload": {"a": {"exists": False}}}, {"payload": {"a": {"exists": False}}}),
        ({"payload": {"n": 1}}, {"payload": {"n": 1.0}}),  # JSON's equality
    ],
)
def test_a_match_covers_the_stricter_one(broad: Any, narrow: Any) -> None:
    assert covers(broad, narrow)


@pytest.mark.parametrize(
    ("broad", "narrow"),
    [
        (FAILED, {}),
        (FAILED, CHECK_RUN),  # the stricter one is not the broader
        (CHECK_RUN, {"headers": {"X-GitHub-Event": "push"}}),  # disjoint
        ({"payload": {"a": "x"}}, {"payload": {"a": {"in": ["x", "y"]}}}),
        ({"payload": {"a": {"exists": True}}}, {"payload": {"a": {"ne": "x"}}}),  # absent passes
        ({"payload": {"a": {"ne": "x"}}}, {"payload": {"a": {"exists": True}}}),
        ({"payload": {"a": {"ne": "x"}}}, {"payload": {"a": {"prefix": "x"}}}),
        ({"payload": {"a": {"prefix": "v1"}}}, {"payload": {"a": {"prefix": "v"}}}),
        ({"payload": {"a": {"in": ["x"]}}}, {"payload": {"a": {"prefix": "x"}}}),
        ({"payload": {"n": True}}, {"payload": {"n": 1}}),  # JSON's types
        ({}, {"payload": {"a": {"in": []}}}),  # matches nothing, so makes no todo to double
        ({}, {"headers": {"b": {"exists": False, "eq": "1"}}}),  # nor does this
    ],
)
def test_a_match_does_not_cover_a_wider_or_disjoint_one(broad: Any, narrow: Any) -> None:
    assert not covers(broad, narrow)


def test_a_match_outside_the_language_is_refused() -> None:
    with pytest.raises(InvalidMatch, match="unknown section"):
        covers({"body": {}}, {})


# Whatever the matches, covers(broad, narrow) means: no delivery matches narrow and not broad.
# Checked over every delivery built from a small set of values, which every operand below is
# drawn from, plus the field's absence.
VALUES: list[Any] = ["x", "xy", "y", "", 1, 1.0, True, None]
ABSENT = object()
FIELDS = [("headers", "x-event"), ("payload", "a"), ("payload", "b")]
operand = st.sampled_from(VALUES)


@st.composite
def conditions(draw: st.DrawFn) -> Any:
    """A literal, or one to three operators with operands from VALUES."""
    if draw(st.booleans()):
        return draw(operand)
    ops: dict[str, Any] = {}
    for op in draw(
        st.lists(
            st.sampled_from(["eq", "ne", "in", "not_in", "exists", "prefix"]),
            min_size=1,
            max_size=3,
            unique=True,
        )
    ):
        if op in ("in", "not_in"):
            ops[op] = draw(st.lists(operand, max_size=3))
        elif op == "exists":
            ops[op] = draw(st.booleans())
        elif op == "prefix":
            ops[op] = draw(st.sampled_from(["", "x", "xy", "y"]))
        else:
            ops[op] = draw(operand)
    return ops


@st.composite
def matches(draw: st.DrawFn) -> dict[str, dict[str, Any]]:
    match: dict[str, dict[str, Any]] = {}
    for section, key in draw(st.lists(st.sampled_from(FIELDS), max_size=3, unique=True)):
        match.setdefault(section, {})[key] = draw(conditions())
    return match


@st.composite
def pairs(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two matches, the second often keeping some of the first's conditions: pairs that do or
    nearly overlap, which two independent draws seldom are."""
    broad, narrow = draw(matches()), draw(matches())
    for section, fields in broad.items():
        for key, value in fields.items():
            if draw(st.booleans()):
                narrow.setdefault(section, {})[key] = value
    return broad, narrow


def deliveries() -> list[tuple[dict[str, str], dict[str, Any]]]:
    header_values = [v for v in VALUES if isinstance(v, str)] + [ABSENT]
    found = []
    for header, a, b in itertools.product(header_values, [*VALUES, ABSENT], [*VALUES, ABSENT]):
        headers = {} if header is ABSENT else {"x-event": header}
        payload = {k: v for k, v in (("a", a), ("b", b)) if v is not ABSENT}
        found.append((headers, payload))
    return found


DELIVERIES = deliveries()


# Every pair of conditions on one field, against every value of the field: the exhaustive check
# of the per-field reasoning; the property test below then mixes fields.
SINGLE: list[Any] = [
    *VALUES,
    *({"ne": v} for v in VALUES),
    *({"in": vs} for vs in ([], ["x"], ["x", "y"], ["x", 1], [None, True])),
    *({"not_in": vs} for vs in ([], ["x"], ["x", "y"], [1, ""])),
    {"exists": True},
    {"exists": False},
    *({"prefix": p} for p in ("", "x", "xy", "y")),
    {"prefix": "x", "ne": "xy"},
    {"prefix": "x", "not_in": ["x", "xy"]},
    {"prefix": "x", "exists": False},
    {"prefix": "x", "in": ["xy", "y"]},
    {"prefix": "xy", "eq": "x"},
    {"in": ["x", "y"], "ne": "y"},
    {"exists": True, "ne": "x"},
    {"exists": False, "ne": "x"},
]


def test_covers_never_claims_an_overlap_on_one_field_a_value_disproves() -> None:
    claimed = 0
    for broad, narrow in itertools.product(SINGLE, SINGLE):
        if not covers({"payload": {"a": broad}}, {"payload": {"a": narrow}}):
            continue
        claimed += 1
        wide, strict = (
            parse_match({"payload": {"a": broad}}),
            parse_match({"payload": {"a": narrow}}),
        )
        for value in [*VALUES, ABSENT]:
            payload = {} if value is ABSENT else {"a": value}
            if evaluate(strict, {}, payload)[0]:
                assert evaluate(wide, {}, payload)[0], (broad, narrow, value)
    assert claimed > len(SINGLE)  # more than each condition covering itself


@settings(max_examples=300, deadline=None)
@given(pair=pairs())
def test_covers_never_claims_an_overlap_a_delivery_disproves(
    pair: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    broad, narrow = pair
    if not covers(broad, narrow):
        return
    wide, strict = parse_match(broad), parse_match(narrow)
    for headers, payload in DELIVERIES:
        if evaluate(strict, headers, payload)[0]:
            assert evaluate(wide, headers, payload)[0], (broad, narrow, headers, payload)
