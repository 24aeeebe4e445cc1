"""create: a pending todo on a live endpoint's queue; bad input writes nothing."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from switchboard.lib.errors import InvalidInput
from tests.base import Personas
from tests.rows import attempt_rows, count, todo_row
from todos import lifecycle


def test_create_stores_a_pending_todo_with_no_attempt(personas: Personas) -> None:
    todo = lifecycle.create(
        personas.endpoint_a.id,
        queue="ci-failures",
        title="Fix the build",
        payload={"run": 43, "text": "héllo"},
        work_order="look at the log",
        max_attempts=3,
        routing_trace=[{"rule": 1}],
        assignee="worker-9",
    )

    row = todo_row(todo.id)
    assert row["id"].startswith("td_") and len(row["id"]) == 23
    assert row["endpoint_id"] == personas.endpoint_a.id
    assert (row["queue"], row["title"], row["work_order"]) == (
        "ci-failures",
        "Fix the build",
        "look at the log",
    )
    assert row["payload"] == {"run": 43, "text": "héllo"}
    assert row["routing_trace"] == [{"rule": 1}]
    assert row["assignee"] == "worker-9"
    assert row["state"] == "pending"
    assert (row["attempt"], row["max_attempts"]) == (0, 3)
    assert (row["attempts_total"], row["attempts_pruned"]) == (0, 0)
    assert row["owner"] is None and row["lease_expires_at"] is None
    assert row["finished_at"] is None and row["next_retry_at"] is None
    assert attempt_rows(todo.id) == []


def test_create_defaults_to_an_empty_payload_and_five_attempts(personas: Personas) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="default")

    row = todo_row(todo.id)
    assert row["payload"] == {}
    assert row["max_attempts"] == 5
    assert row["title"] == ""


def test_create_removes_nul_from_title_and_work_order(personas: Personas) -> None:
    todo = lifecycle.create(
        personas.endpoint_a.id, queue="default", title="a\x00b", work_order="c\x00d"
    )

    row = todo_row(todo.id)
    assert (row["title"], row["work_order"]) == ("ab", "cd")


@pytest.mark.parametrize("max_attempts", [1, 1000])
def test_create_accepts_max_attempts_at_its_bounds(personas: Personas, max_attempts: int) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="default", max_attempts=max_attempts)

    assert todo_row(todo.id)["max_attempts"] == max_attempts


def test_create_accepts_a_queue_of_128_bytes_and_a_title_of_1024_bytes(
    personas: Personas,
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q" * 128, title="é" * 512)

    row = todo_row(todo.id)
    assert len(row["queue"]) == 128
    assert len(row["title"].encode()) == 1024


def test_create_accepts_a_payload_holding_the_text_backslash_u0000(personas: Personas) -> None:
    # Six characters, a backslash then "u0000": no NUL in it, and jsonb stores it happily.
    text = 'printf("\\u0000")'
    todo = lifecycle.create(personas.endpoint_a.id, queue="default", payload={"code": text})

    assert todo_row(todo.id)["payload"] == {"code": text}


def test_create_returns_its_json_values_decoded(personas: Personas) -> None:
    # Django's connection loads jsonb as text; TodoView must hand back the values, not the text.
    todo = lifecycle.create(
        personas.endpoint_a.id, queue="default", payload={"run": 43}, routing_trace=["r1"]
    )

    assert (todo.payload, todo.routing_trace, todo.result) == ({"run": 43}, ["r1"], None)


def test_create_on_a_revoked_endpoint_writes_nothing(personas: Personas) -> None:
    lifecycle.revoke_endpoint(personas.alice.id, personas.endpoint_a.id)

    with pytest.raises(InvalidInput) as excinfo:
        lifecycle.create(personas.endpoint_a.id, queue="default")

    assert excinfo.value.field == "endpoint"
    assert count("todos") == 0


BAD_INPUT: list[tuple[str, dict[str, Any]]] = [
    ("queue", {"queue": ""}),
    ("queue", {"queue": "q" * 129}),
    ("queue", {"queue": "é" * 65}),
    ("queue", {"queue": "ci\nfailures"}),
    ("queue", {"queue": "ci\x00failures"}),
    ("queue", {"queue": "ci\x7ffailures"}),
    ("queue", {"queue": None}),
    ("queue", {"queue": "ci-*"}),  # the list's wildcard: such a queue could never be listed
    ("title", {"title": "t" * 1025}),
    ("title", {"title": "é" * 513}),
    ("title", {"title": None}),
    ("max_attempts", {"max_attempts": 0}),
    ("max_attempts", {"max_attempts": 1001}),
    ("max_attempts", {"max_attempts": True}),
    ("max_attempts", {"max_attempts": "5"}),
    ("payload", {"payload": {"text": "a\u0000b"}}),
    ("payload", {"payload": {"a\u0000b": 1}}),
    ("payload", {"payload": ["\u0000"]}),
    ("payload", {"payload": {"n": float("nan")}}),
    ("payload", {"payload": {"x": object()}}),
    ("routing_trace", {"routing_trace": ["\u0000"]}),
    ("assignee", {"assignee": ""}),
    ("assignee", {"assignee": "w\torker"}),
    ("work_order", {"work_order": "w" * 65537}),
    ("work_order", {"work_order": 7}),
    # Instants Python could not read back from the row (years 10000 and 0 in UTC).
    (
        "finish_by",
        {"finish_by": dt.datetime(9999, 12, 31, 23, tzinfo=dt.timezone(-dt.timedelta(hours=12)))},
    ),
    (
        "not_before",
        {"not_before": dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=14)))},
    ),
    ("not_before", {"not_before": dt.datetime(1969, 12, 31, 23, 59, tzinfo=dt.UTC)}),
]


@pytest.mark.parametrize(("field", "bad"), BAD_INPUT)
def test_create_with_bad_input_raises_invalid_input_and_writes_nothing(
    personas: Personas, field: str, bad: dict[str, Any]
) -> None:
    kwargs: dict[str, Any] = {"queue": "default", "title": "t", **bad}

    with pytest.raises(InvalidInput) as excinfo:
        lifecycle.create(personas.endpoint_a.id, **kwargs)

    assert excinfo.value.field == field
    assert excinfo.value.code == "invalid"
    assert count("todos") == 0
