"""Binding (otlp/bind.py): the rules in order, never a guess, the tenant boundary.

``resolve`` is pure and tested on hand-made query rows; ``bind`` runs the real query.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from otlp.bind import Found, bind, resolve
from otlp.translate import Candidate, collect
from tests.base import Personas
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, trace_id
from todos import lifecycle

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NS = 1_000_000_000


def at(seconds: float) -> int:
    return int((T0.timestamp() + seconds) * NS)


def candidates(*specs: SpanSpec) -> list[Candidate]:
    return collect(request(list(specs))).candidates


def attempt(todo: str, seq: int, claimed_s: float) -> dict[str, Any]:
    return {
        "via": "attempt",
        "todo_id": todo,
        "seq": seq,
        "trace_id": None,
        "claimed_at": T0 + dt.timedelta(seconds=claimed_s),
        "ended_at": None,
    }


def found(*rows: dict[str, Any]) -> Found:
    return Found.from_rows(rows)


def traced(todo: str, seq: int, trace: bytes) -> dict[str, Any]:
    return {"via": "trace", "todo_id": todo, "seq": seq, "trace_id": trace}


def named(todo: str) -> dict[str, Any]:
    return {"via": "attr", "todo_id": todo, "seq": None, "trace_id": None}


def prior(todo: str, trace: bytes) -> dict[str, Any]:
    return {"via": "prior", "todo_id": todo, "seq": None, "trace_id": trace}


def bound(resolution: Any) -> list[tuple[str, int, str] | None]:
    return [b and (b.todo_id, b.attempt_seq, b.via) for b in resolution.bindings]


def test_the_attempts_trace_wins_over_an_attribute() -> None:
    trace = trace_id()
    spec = SpanSpec(trace, attributes={"switchboard.todo.id": "td_b"}, start_ns=at(5))

    resolution = resolve(
        candidates(spec), found(traced("td_a", 2, trace), named("td_b"), attempt("td_b", 1, 0))
    )

    assert bound(resolution) == [("td_a", 2, "trace")]
    assert resolution.new_bindings == set()


def test_an_attribute_binds_its_trace_and_its_siblings_in_the_same_request() -> None:
    trace = trace_id()
    parent = SpanSpec(trace, attributes={"switchboard.todo.id": "td_a"}, start_ns=at(10))
    child = SpanSpec(trace, parent=parent.span, start_ns=at(11))

    resolution = resolve(
        candidates(child, parent),
        found(named("td_a"), attempt("td_a", 1, 0), attempt("td_a", 2, 9)),
    )

    assert bound(resolution) == [("td_a", 2, "prior"), ("td_a", 2, "attr")]
    assert resolution.new_bindings == {("td_a", trace)}


@pytest.mark.parametrize(
    ("start", "seq_attribute", "expected"),
    [
        (at(5), None, 1),  # within attempt 1
        (at(25), None, 2),  # after attempt 2 was claimed
        (at(-3), None, 1),  # before any claim (a skewed clock): the first attempt
        (at(25), 1, 1),  # the seq attribute decides when that attempt exists
        (at(25), 7, 2),  # … and is ignored when it does not
    ],
)
def test_the_attempt_is_chosen_by_seq_else_by_interval(
    start: int, seq_attribute: int | None, expected: int
) -> None:
    attributes: dict[str, Any] = {"switchboard.todo.id": "td_a"}
    if seq_attribute is not None:
        attributes["switchboard.attempt.seq"] = seq_attribute
    spec = SpanSpec(trace_id(), attributes=attributes, start_ns=start)

    resolution = resolve(
        candidates(spec), found(named("td_a"), attempt("td_a", 1, 0), attempt("td_a", 2, 20))
    )

    assert bound(resolution) == [("td_a", expected, "attr")]


def test_an_earlier_binding_of_the_trace_carries_a_span_without_the_attribute() -> None:
    trace = trace_id()

    resolution = resolve(
        candidates(SpanSpec(trace, start_ns=at(1))),
        found(prior("td_a", trace), attempt("td_a", 1, 0)),
    )

    assert bound(resolution) == [("td_a", 1, "prior")]


def test_ambiguity_binds_nothing() -> None:
    shared, bound_twice = trace_id(), trace_id()

    resolution = resolve(
        candidates(SpanSpec(shared), SpanSpec(bound_twice)),
        found(
            traced("td_a", 1, shared),
            traced("td_b", 1, shared),
            prior("td_a", bound_twice),
            prior("td_b", bound_twice),
            attempt("td_a", 1, 0),
            attempt("td_b", 1, 0),
        ),
    )

    assert bound(resolution) == [None, None]
    assert resolution.unbound == 2


def test_one_trace_on_several_attempts_of_one_todo_binds_by_interval() -> None:
    trace = trace_id()

    resolution = resolve(
        candidates(SpanSpec(trace, start_ns=at(30))),
        found(
            traced("td_a", 1, trace),
            traced("td_a", 3, trace),
            attempt("td_a", 1, 0),
            attempt("td_a", 2, 10),
            attempt("td_a", 3, 20),
        ),
    )

    assert bound(resolution) == [("td_a", 3, "trace")]


def test_a_todo_never_claimed_binds_nothing() -> None:
    spec = SpanSpec(trace_id(), attributes={"switchboard.todo.id": "td_a"})

    assert bound(resolve(candidates(spec), found(named("td_a")))) == [None]


def test_an_unknown_todo_id_binds_nothing() -> None:
    spec = SpanSpec(trace_id(), attributes={"switchboard.todo.id": "td_nope"})

    assert bound(resolve(candidates(spec), found())) == [None]


# --- the query ---------------------------------------------------------------------------------

pytestmark_db = pytest.mark.django_db


@pytestmark_db
def test_the_query_binds_by_trace_and_by_attribute_in_the_endpoints_scope(
    personas: Personas,
) -> None:
    trace = trace_id()
    by_trace = claimed_with_trace(personas.endpoint_a.id, trace)
    by_attribute = claimed_with_trace(personas.endpoint_a.id, None, queue="other")
    specs = [
        SpanSpec(trace),
        SpanSpec(trace_id(), attributes={"switchboard.todo.id": by_attribute.todo.id}),
    ]

    mine = bind(personas.endpoint_a.id, candidates(*specs))
    theirs = bind(personas.endpoint_b.id, candidates(*specs))

    assert bound(mine) == [(by_trace.todo.id, 1, "trace"), (by_attribute.todo.id, 1, "attr")]
    assert bound(theirs) == [None, None]


@pytestmark_db
def test_the_query_sees_only_this_endpoints_earlier_bindings(personas: Personas) -> None:
    from otlp.store import store
    from otlp.translate import translate

    alices = claimed_with_trace(personas.endpoint_a.id, None)
    lifecycle.create(personas.endpoint_b.id, queue="q")
    trace = trace_id()
    first = candidates(SpanSpec(trace, attributes={"switchboard.todo.id": alices.todo.id}))
    resolution = bind(personas.endpoint_a.id, first)
    store(
        [translate(first[0], alices.todo.id, 1, False)],
        resolution.new_bindings,
        attempt_cap=100,
        todo_cap=100,
    )
    later = candidates(SpanSpec(trace))

    assert bound(bind(personas.endpoint_a.id, later)) == [(alices.todo.id, 1, "prior")]
    assert bound(bind(personas.endpoint_b.id, later)) == [None]
