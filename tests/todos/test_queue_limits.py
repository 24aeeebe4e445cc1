"""A queue's limits (todos/lifecycle/queues.py set_queue_limits, todos/sql/_queue_limits.sql):
max_in_flight and claims_per_minute bound the agents' claims (claim_next on one queue or
several, a claim by id), never the owning human's; an empty claim_next says why
(queries.why_empty); bad values are refused naming the field."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest
from django.db import connection

from switchboard.lib import sql as sql_lib
from switchboard.lib.errors import InvalidInput, LeaseConflict
from switchboard.lib.sql import fetch_all
from tests.base import Personas
from tests.reach import OWNER, new_todo
from tests.rows import todo_row
from todos import lifecycle
from todos.lifecycle import agent, statements
from todos.models import QueueSettings
from todos.types import QueueEmpty


def _limit(personas: Personas, queue: str = "triage", **limits: int | None) -> None:
    lifecycle.set_queue_limits(personas.endpoint_a.id, queue, human_id=personas.alice.id, **limits)


def _claim(personas: Personas, *queues: str) -> str | None:
    got = lifecycle.claim_next(personas.endpoint_a.id, list(queues or ["triage"]), owner=OWNER)
    return None if got is None else got.todo.id


def _why(personas: Personas, *queues: str) -> tuple[QueueEmpty, ...]:
    got = lifecycle.claim_next_or_why(personas.endpoint_a.id, list(queues), owner=OWNER)
    assert isinstance(got, tuple), got
    return got


def test_max_in_flight_stops_claims_at_the_limit_and_a_complete_makes_room(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    for _ in range(4):
        new_todo(ep, "triage")
    _limit(personas, max_in_flight=2)

    first, second = _claim(personas), _claim(personas)
    assert first and second
    assert _claim(personas) is None

    lifecycle.complete(ep, first, owner=OWNER)
    assert _claim(personas) is not None
    assert _claim(personas) is None


def test_a_released_todo_gives_its_place_back(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    new_todo(ep, "triage")
    new_todo(ep, "triage")
    _limit(personas, max_in_flight=1)
    held = _claim(personas)
    assert held and _claim(personas) is None

    lifecycle.release(ep, held, owner=OWNER)

    assert _claim(personas) is not None


def test_a_lapsed_lease_does_not_count_as_held(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    new_todo(ep, "triage")
    new_todo(ep, "triage")
    _limit(personas, max_in_flight=1)
    held = _claim(personas)
    assert held
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE todos SET lease_expires_at = now() - interval '1 minute' WHERE id = %s",
            [held],
        )

    assert _claim(personas) is not None


def test_the_limit_is_per_queue_and_per_endpoint(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    new_todo(ep, "triage")
    other_queue = new_todo(ep, "build").id
    theirs = new_todo(personas.endpoint_b.id, "triage").id
    _limit(personas, max_in_flight=0)

    assert _claim(personas) is None
    assert _claim(personas, "triage", "build") == other_queue
    got = lifecycle.claim_next(personas.endpoint_b.id, ["triage"], owner=OWNER)
    assert got is not None and got.todo.id == theirs


def test_claim_next_on_several_queues_walks_past_a_queue_at_its_limit(
    personas: Personas,
) -> None:
    """The walk arm (claim_next_queues.sql) honours the limit as the heads arm does."""
    ep = personas.endpoint_a.id
    for _ in range(3):
        new_todo(ep, "triage")
    open_one = new_todo(ep, "build").id
    _limit(personas, max_in_flight=0)

    assert lifecycle.CLAIM_NEXT_QUEUES.count("FROM queue_limited l") == 2  # heads and walk
    assert _claim(personas, "triage", "build") == open_one


def test_an_agents_claim_by_id_honours_the_limit_and_the_owners_does_not(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep, "triage").id
    _limit(personas, max_in_flight=0)

    with pytest.raises(LeaseConflict, match="its queue 'triage' holds 0 of its max_in_flight 0"):
        lifecycle.claim(ep, todo_id, owner=OWNER)
    assert todo_row(todo_id)["state"] == "pending"

    lifecycle.operator_claim(personas.alice.id, todo_id)
    assert todo_row(todo_id)["state"] == "claimed"


def test_an_agents_claim_by_id_on_a_queue_that_allows_no_claims_says_so(
    personas: Personas,
) -> None:
    todo_id = new_todo(personas.endpoint_a.id, "triage").id
    _limit(personas, claims_per_minute=0)
    with pytest.raises(LeaseConflict, match="its queue 'triage' allows no claims"):
        lifecycle.claim(personas.endpoint_a.id, todo_id, owner=OWNER)


def test_claims_per_minute_spends_a_token_per_claim(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    for _ in range(4):
        new_todo(ep, "triage")
    _limit(personas, claims_per_minute=2)

    assert _claim(personas) and _claim(personas)
    assert _claim(personas) is None

    [why] = _why(personas, "triage")
    assert why.reason == "rate" and why.at is not None
    # One token back after 30 s at 2 a minute: the next claim is due about then.
    wait = (why.at - dt.datetime.now(dt.UTC)).total_seconds()
    assert 25 < wait <= 31


def test_the_bucket_refills_with_time(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    new_todo(ep, "triage")
    new_todo(ep, "triage")
    _limit(personas, claims_per_minute=1)
    assert _claim(personas) and _claim(personas) is None
    with connection.cursor() as cur:  # a minute passes, as far as the bucket can tell
        cur.execute("UPDATE queue_settings SET refilled_at = refilled_at - interval '61 s'")

    assert _claim(personas) is not None


def test_an_empty_claim_says_why_for_each_queue(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    for queue in ("held", "rated", "paused"):
        new_todo(ep, queue)
    lifecycle.claim_next(ep, ["held"], owner=OWNER)
    new_todo(ep, "held")
    _limit(personas, "held", max_in_flight=1)
    _limit(personas, "rated", claims_per_minute=0)
    lifecycle.pause_queue(ep, "paused", human_id=None)

    why = {w.queue: w for w in _why(personas, "held", "rated", "paused", "none")}

    assert why["held"].reason == "max_in_flight"
    assert (why["held"].in_flight, why["held"].max_in_flight) == (1, 1)
    assert why["rated"].reason == "rate" and why["rated"].at is None
    assert why["paused"].reason == "paused"
    assert why["none"].reason == "empty"


def test_the_owners_limits_are_set_kept_and_cleared(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    first = lifecycle.set_queue_limits(
        ep, "triage", human_id=personas.alice.id, max_in_flight=3, run_timeout_seconds=600
    )
    kept = lifecycle.set_queue_limits(ep, "triage", human_id=None, claims_per_minute=10)
    cleared = lifecycle.set_queue_limits(ep, "triage", human_id=None, max_in_flight=None)
    again = lifecycle.set_queue_limits(ep, "triage", human_id=None, max_in_flight=None)

    assert (first.max_in_flight, first.run_timeout_seconds, first.changed) == (3, 600, True)
    assert (kept.max_in_flight, kept.claims_per_minute) == (3, 10)
    assert (cleared.max_in_flight, cleared.claims_per_minute) == (None, 10)
    assert again.changed is False
    row = QueueSettings.objects.get(endpoint_id=ep, queue="triage")
    assert row.updated_by == "command:queue" and row.tokens == 10


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_in_flight", -1),
        ("claims_per_minute", -5),
        ("run_timeout_seconds", 9),
        ("max_in_flight", "3"),
        ("claims_per_minute", True),
    ],
)
def test_a_bad_limit_is_refused_naming_the_field(
    personas: Personas, field: str, value: object
) -> None:
    with pytest.raises(InvalidInput) as caught:
        lifecycle.set_queue_limits(
            personas.endpoint_a.id, "triage", human_id=personas.alice.id, **{field: value}
        )
    assert caught.value.field == field
    assert not QueueSettings.objects.exists()


def test_another_humans_endpoint_reads_as_unknown(personas: Personas) -> None:
    with pytest.raises(InvalidInput) as caught:
        lifecycle.set_queue_limits(
            personas.endpoint_b.id, "triage", human_id=personas.alice.id, max_in_flight=1
        )
    assert caught.value.field == "endpoint"
    assert not QueueSettings.objects.exists()


def test_an_unlimited_queue_locks_and_spends_nothing(personas: Personas) -> None:
    """A row with only a run timeout limits nothing: the claim neither locks nor writes it."""
    ep = personas.endpoint_a.id
    new_todo(ep, "triage")
    lifecycle.set_queue_limits(ep, "triage", human_id=None, run_timeout_seconds=60)
    before = QueueSettings.objects.get(endpoint_id=ep, queue="triage").refilled_at

    assert _claim(personas) is not None
    assert QueueSettings.objects.get(endpoint_id=ep, queue="triage").refilled_at == before


# --- the fast form: one queue that sets no limit (docs/decisions/0044-claim-unlimited-queue.md) -


@pytest.fixture
def statements_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lifecycle statements run from here on, by their ``manage.py sql`` names."""
    names = {text: name for name, text in statements.named().items()}
    ran: list[str] = []
    fetch = sql_lib._fetch

    def spy(sql: str, params: Any, rows: Any) -> Any:
        ran.append(names.get(sql, "other"))
        return fetch(sql, params, rows)

    monkeypatch.setattr(sql_lib, "_fetch", spy)
    return ran


def test_a_queue_without_limits_is_claimed_by_the_fast_form_alone(
    personas: Personas, statements_run: list[str]
) -> None:
    new_todo(personas.endpoint_a.id, "triage")
    # A settings row that limits nothing (a run timeout only) is no limit.
    lifecycle.set_queue_limits(
        personas.endpoint_a.id, "triage", human_id=None, run_timeout_seconds=60
    )
    statements_run.clear()

    assert _claim(personas) is not None
    assert _claim(personas) is None

    assert statements_run == ["claim_next_unlimited", "claim_next_unlimited", "claim_empty"]


def test_the_fast_form_takes_nothing_from_a_queue_that_sets_a_limit(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep, "triage")
    _limit(personas, max_in_flight=5)
    params = {
        "endpoint_id": ep,
        "queue": "triage",
        "queues": ["triage"],
        "owner": OWNER,
        "ttl_seconds": 60,
        "claimer_kind": "endpoint",
        "claimer_endpoint_id": ep,
        "claimer_session": None,
        "claimant": None,
        "token_hash": None,
        "attempts_cap": 50,
        "trace_id": None,
    }

    assert fetch_all(lifecycle.CLAIM_NEXT_UNLIMITED, params) == []
    assert todo_row(todo.id)["state"] == "pending"
    assert [row["id"] for row in fetch_all(lifecycle.CLAIM_NEXT, params)] == [todo.id]


def test_a_limited_queue_is_claimed_in_the_full_form_and_remembered_for_a_while(
    personas: Personas, statements_run: list[str]
) -> None:
    ep = personas.endpoint_a.id
    for _ in range(3):
        new_todo(ep, "triage")
    _limit(personas, max_in_flight=2)
    statements_run.clear()

    assert _claim(personas) is not None
    # The fast form took nothing, the reasons showed the limit, the full form took the todo.
    assert statements_run == ["claim_next_unlimited", "claim_empty", "claim_next"]
    statements_run.clear()
    assert _claim(personas) is not None
    assert _claim(personas) is None  # at its limit
    assert statements_run[:2] == ["claim_next", "claim_next"]
    assert "claim_next_unlimited" not in statements_run

    # The limit lifted: the process still believes it until its memory of the queue expires.
    _limit(personas, max_in_flight=None)
    new_todo(ep, "triage")
    statements_run.clear()
    assert _claim(personas) is not None
    assert statements_run == ["claim_next"]
    # Its memory expires (moved, not waited for: the entry holds the instant it ends).
    until = agent._limited_queues[(ep, "triage")]
    assert until > time.monotonic() + agent.LIMITED_QUEUE_SECONDS - 30
    agent._limited_queues[(ep, "triage")] = time.monotonic() - 1
    statements_run.clear()
    assert _claim(personas) is not None
    assert statements_run == ["claim_next_unlimited"]


def test_a_limit_set_after_fast_claims_holds_from_the_next_claim(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    for _ in range(4):
        new_todo(ep, "triage")
    assert _claim(personas) is not None  # the fast form: no limit yet

    _limit(personas, max_in_flight=2)

    assert _claim(personas) is not None
    assert _claim(personas) is None
    assert _why(personas, "triage")[0].reason == "max_in_flight"


def test_the_memory_of_limited_queues_is_bounded(
    personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agent, "_LIMITED_QUEUES_MAX", 2)
    monkeypatch.setattr(agent, "_limited_queues", {})
    ep = personas.endpoint_a.id
    for queue in ("q1", "q2", "q3"):
        new_todo(ep, queue)
        _limit(personas, queue, claims_per_minute=10)
        assert _claim(personas, queue) is not None

    assert list(agent._limited_queues) == [(ep, "q3")]
