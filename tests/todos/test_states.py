"""The state machine once: its Python predicates, its ORM filters and its SQL fragments agree.

Every state a todo can be in is reached through real transitions (leases and retries are moved
into the past on the row, as PostgreSQL's clock cannot be moved). A table written out by hand
says what each of those todos is; the tests check, row by row, the predicates of
``todos.states`` on a loaded ``Todo`` and on a ``TodoView``, the ``Todo.objects`` filters, and
the SQL fragments of ``todos/sql`` run through one SELECT, against that table. The operator
actions are checked against the operator statements themselves: each is run in a savepoint
that is rolled back.

One combination cannot be reached and is not in the table: failed with a retry scheduled and
the budget spent (``fail`` schedules a retry only while budget is left, and nothing else sets
``next_retry_at``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from switchboard.lib.errors import LeaseConflict
from switchboard.lib.sql import fetch_all, load
from switchboard.scope import Scope
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.reach import OWNER, claimed, expire_lease, make_retry_due, new_todo
from tests.rows import db_now, todo_row
from todos import lifecycle, queries, states
from todos.models import Todo
from todos.states import State
from todos.types import TodoView

pytestmark = pytest.mark.django_db

# The directory the lifecycle loads its statements and fragments from.
SQL = lifecycle.statements.SQL_DIR


@dataclass(frozen=True)
class Row:
    """What a todo is, by hand: the expected answer of every predicate."""

    state: State
    claimable: bool
    in_flight: bool
    dead_letter: bool
    unfinished: bool
    actions: frozenset[str]


def row(state: State, flags: str, actions: str = "") -> Row:
    """``flags``: the predicates that hold, of claimable, in_flight, dead_letter, unfinished."""
    given = set(flags.split())
    assert given <= {"claimable", "in_flight", "dead_letter", "unfinished"}, given
    return Row(
        state,
        "claimable" in given,
        "in_flight" in given,
        "dead_letter" in given,
        "unfinished" in given,
        frozenset(actions.split()),
    )


HOLDING = "extend complete fail release cancel"  # what an operator may do to any claimed todo
TABLE: dict[str, Row] = {
    "pending": row(State.PENDING, "claimable unfinished", "claim cancel"),
    "pending, released by its holder": row(State.PENDING, "claimable unfinished", "claim cancel"),
    "pending, its lapsed lease reaped": row(State.PENDING, "claimable unfinished", "claim cancel"),
    "pending, retried by a human": row(State.PENDING, "claimable unfinished", "claim cancel"),
    # Time on a todo (_claimable.sql): not before not_before, never past finish_by.
    "pending, not_before ahead": row(State.PENDING, "unfinished", "cancel"),
    "pending, not_before passed": row(State.PENDING, "claimable unfinished", "claim cancel"),
    "pending, finish_by passed (the sweeper's next)": row(State.PENDING, "unfinished", "cancel"),
    # start_by bounds the first claim only: a pending todo past it is the sweeper's next, a
    # lapsed lease past it was claimed in time and may be taken over.
    "pending, start_by passed (the sweeper's next)": row(State.PENDING, "unfinished", "cancel"),
    "claimed, lapsed lease, start_by passed (a takeover may claim it)": row(
        State.CLAIMED, "claimable in_flight unfinished", f"claim {HOLDING}"
    ),
    "claimed, lapsed lease, finish_by passed": row(State.CLAIMED, "in_flight unfinished", HOLDING),
    "failed, dead letter: finish_by passed while claimed": row(
        State.FAILED, "dead_letter", "retry"
    ),
    "claimed, live lease": row(State.CLAIMED, "in_flight unfinished", HOLDING),
    "claimed, live lease, budget spent": row(State.CLAIMED, "in_flight unfinished", HOLDING),
    "claimed by its owner on the Board": row(State.CLAIMED, "in_flight unfinished", HOLDING),
    "claimed, lapsed lease, budget left (a takeover may claim it)": row(
        State.CLAIMED, "claimable in_flight unfinished", f"claim {HOLDING}"
    ),
    "claimed, lapsed lease, budget spent": row(State.CLAIMED, "in_flight unfinished", HOLDING),
    "claimed again by a takeover": row(State.CLAIMED, "in_flight unfinished", HOLDING),
    "failed, retry due, budget left": row(
        State.FAILED, "claimable unfinished", "claim retry cancel"
    ),
    "failed, retry in the future": row(State.FAILED, "unfinished", "retry cancel"),
    "failed, dead letter: not retryable": row(State.FAILED, "dead_letter", "retry"),
    "failed, dead letter: failed with the budget spent": row(State.FAILED, "dead_letter", "retry"),
    "failed, dead letter: reaped with the budget spent": row(State.FAILED, "dead_letter", "retry"),
    # Revoking dead-letters the endpoint's unfinished todos, and retry refuses them after.
    "failed, dead letter: pending when its endpoint was revoked": row(State.FAILED, "dead_letter"),
    "failed, dead letter: claimed when its endpoint was revoked": row(State.FAILED, "dead_letter"),
    "input-required": row(State.INPUT_REQUIRED, "in_flight unfinished", "cancel"),
    "auth-required": row(State.AUTH_REQUIRED, "in_flight unfinished", "cancel"),
    "completed": row(State.COMPLETED, ""),
    "canceled": row(State.CANCELED, "", "retry"),
    "canceled while claimed": row(State.CANCELED, "", "retry"),
    "rejected": row(State.REJECTED, "", "retry"),
}


def soon() -> dt.datetime:
    return timezone.now() + dt.timedelta(hours=1)


def moved(todo_id: str, **columns: str) -> None:
    """Set time columns to SQL expressions: PostgreSQL's clock, which Python's does not move."""
    sets = ", ".join(f"{name} = {expr}" for name, expr in columns.items())
    fetch_all(f"UPDATE todos SET {sets} WHERE id = %(id)s", {"id": todo_id})


def reach_every_state(p: Personas) -> dict[str, str]:
    """One todo per row of TABLE, each brought there by real transitions; name → todo id."""
    ep, alice = p.endpoint_a.id, p.alice.id
    ids: dict[str, str] = {}

    def claim(name: str, **kw: Any) -> str:
        ids[name] = claimed(ep, **kw).todo.id
        return ids[name]

    # The reaper sweeps every lapsed lease, so its rows come first.
    requeued = claim("pending, its lapsed lease reaped")
    spent = claim("failed, dead letter: reaped with the budget spent", max_attempts=1)
    expire_lease(requeued)
    expire_lease(spent)
    assert set(lifecycle.reap().requeued) == {requeued}

    # The deadline sweep takes every todo past its finish_by, so its row comes next.
    late = claim("failed, dead letter: finish_by passed while claimed", finish_by=soon())
    moved(late, finish_by="now() - interval '1 second'")
    assert lifecycle.dead_letter_late() == (late,)

    ids["pending, not_before ahead"] = new_todo(ep, not_before=soon()).id
    ids["pending, not_before passed"] = new_todo(ep, not_before=soon()).id
    moved(ids["pending, not_before passed"], not_before="now() - interval '1 second'")
    ids["pending, finish_by passed (the sweeper's next)"] = new_todo(ep, finish_by=soon()).id
    moved(ids["pending, finish_by passed (the sweeper's next)"], finish_by="now()")
    ids["pending, start_by passed (the sweeper's next)"] = new_todo(ep, start_by=soon()).id
    moved(ids["pending, start_by passed (the sweeper's next)"], start_by="now()")
    started = claim(
        "claimed, lapsed lease, start_by passed (a takeover may claim it)", start_by=soon()
    )
    moved(started, start_by="now() - interval '1 second'")
    expire_lease(started)
    passed = claim("claimed, lapsed lease, finish_by passed", finish_by=soon())
    moved(passed, finish_by="now() - interval '1 second'")
    expire_lease(passed)

    ids["pending"] = new_todo(ep).id
    lifecycle.release(ep, claim("pending, released by its holder"), owner=OWNER)
    lifecycle.fail(ep, claim("pending, retried by a human"), owner=OWNER, retryable=False)
    lifecycle.retry(alice, ids["pending, retried by a human"])

    claim("claimed, live lease")
    claim("claimed, live lease, budget spent", max_attempts=1)
    ids["claimed by its owner on the Board"] = new_todo(ep).id
    lifecycle.operator_claim(alice, ids["claimed by its owner on the Board"])
    expire_lease(claim("claimed, lapsed lease, budget left (a takeover may claim it)"))
    expire_lease(claim("claimed, lapsed lease, budget spent", max_attempts=1))
    expire_lease(taken := claim("claimed again by a takeover"))
    assert lifecycle.claim(ep, taken, owner="worker-2").took_over

    lifecycle.fail(ep, claim("failed, retry due, budget left"), owner=OWNER, retryable=True)
    make_retry_due(ids["failed, retry due, budget left"])
    lifecycle.fail(ep, claim("failed, retry in the future"), owner=OWNER, retryable=True)
    lifecycle.fail(ep, claim("failed, dead letter: not retryable"), owner=OWNER, retryable=False)
    name = "failed, dead letter: failed with the budget spent"
    lifecycle.fail(ep, claim(name, max_attempts=1), owner=OWNER, retryable=True)

    doomed = EndpointFactory(owner=p.alice, slug="doomed")
    pending = new_todo(doomed.id).id
    held = lifecycle.claim(doomed.id, new_todo(doomed.id).id, owner=OWNER).todo.id
    revoked = lifecycle.revoke_endpoint(alice, doomed.id)
    assert set(revoked.dead_lettered) == {pending, held}
    ids["failed, dead letter: pending when its endpoint was revoked"] = pending
    ids["failed, dead letter: claimed when its endpoint was revoked"] = held

    for state in states.AWAITING_INPUT_STATES:
        lifecycle.interrupt(ep, claim(state.value), owner=OWNER, state=state)
    lifecycle.complete(ep, claim("completed"), owner=OWNER)
    ids["canceled"] = new_todo(ep).id
    lifecycle.cancel(Scope.of_human(alice), ids["canceled"])
    lifecycle.cancel(Scope.of_endpoint(ep), claim("canceled while claimed"))
    lifecycle.reject(ep, claim("rejected"), owner=OWNER)

    assert ids.keys() == TABLE.keys()
    return ids


@pytest.fixture
def reached(personas: Personas) -> dict[str, str]:
    return reach_every_state(personas)


def mismatches(reached: dict[str, str], predicate: str, actual: Callable[[str], bool]) -> list[str]:
    """The rows where ``actual(todo_id)`` differs from the table's ``predicate``."""
    return [
        f"{name}: table says {getattr(TABLE[name], predicate)}, got {got}"
        for name, todo_id in reached.items()
        if (got := actual(todo_id)) != getattr(TABLE[name], predicate)
    ]


PREDICATES = ("claimable", "in_flight", "dead_letter", "unfinished")


def test_the_table_reaches_every_state_and_each_row_is_in_its_state(
    reached: dict[str, str],
) -> None:
    stored = {name: todo_row(todo_id)["state"] for name, todo_id in reached.items()}

    assert stored == {name: r.state.value for name, r in TABLE.items()}
    assert set(stored.values()) == set(State.values)


@pytest.mark.parametrize("predicate", PREDICATES)
def test_the_python_predicate_on_a_loaded_row_matches_the_table(
    reached: dict[str, str], predicate: str
) -> None:
    now = db_now()  # the statements' now(): fixed for the test's transaction
    check: Callable[[Any], bool] = {
        "claimable": lambda t: states.is_claimable(t, now),
        "in_flight": states.is_in_flight,
        "dead_letter": states.is_dead_letter,
        "unfinished": states.is_unfinished,
    }[predicate]
    todos = Todo.objects.in_bulk(list(reached.values()))

    assert mismatches(reached, predicate, lambda i: check(todos[i])) == []
    assert mismatches(reached, predicate, lambda i: check(TodoView.from_row(todo_row(i)))) == []


@pytest.mark.parametrize("predicate", PREDICATES)
def test_the_orm_filter_matches_the_table(reached: dict[str, str], predicate: str) -> None:
    method = {"dead_letter": "dead_lettered"}.get(predicate, predicate)
    matched = set(getattr(Todo.objects, method)().values_list("id", flat=True))

    assert mismatches(reached, predicate, lambda i: i in matched) == []


def fragment(name: str) -> str:
    """A fragment as the lifecycle splices it: its own markers filled, comments dropped."""
    return load(SQL, f"_{name}")


def test_the_sql_fragments_match_the_table(reached: dict[str, str]) -> None:
    columns = ", ".join(f"({fragment(p)}) AS {p}" for p in PREDICATES)
    rows = fetch_all(
        f"SELECT t.id, {columns} FROM todos t WHERE t.id = ANY(%(ids)s)",
        {"ids": list(reached.values())},
    )
    by_id = {r["id"]: r for r in rows}

    for predicate in PREDICATES:
        assert mismatches(reached, predicate, lambda i, p=predicate: by_id[i][p]) == [], predicate


def test_the_fragments_are_the_text_the_statements_run() -> None:
    # A fragment tested above but spliced differently into a statement would prove nothing.
    assert fragment("claimable") in lifecycle.CLAIM
    assert fragment("claimable") in lifecycle.CLAIM_NEXT
    assert fragment("claimable") in lifecycle.OPERATOR_CLAIM
    for statement in (
        lifecycle.CANCEL_BY_HUMAN,
        lifecycle.CANCEL_BY_REQUESTER,
        lifecycle.REVOKE_ENDPOINT,
    ):
        assert fragment("unfinished") in statement
    assert fragment("in_flight") in fragment("unfinished")
    dead_letter_list = queries.page_statement(
        Scope.of_human(1).endpoints_sql,
        False,
        queries.TodoFilters(dead_letter=True).where_sql(endpoint=False),
        queries.DEFAULT_SORT,
        False,
        False,
    )
    assert fragment("dead_letter") in dead_letter_list


def test_finished_is_what_the_schema_marks_with_finished_at(reached: dict[str, str]) -> None:
    finished = set(Todo.objects.finished().values_list("id", flat=True))
    todos = Todo.objects.in_bulk(list(reached.values()))

    for name, todo_id in reached.items():
        todo = todos[todo_id]
        assert states.is_finished(todo) == (todo.finished_at is not None), name
        assert states.is_finished(todo) == (todo_id in finished) == (not TABLE[name].unfinished)


class _Undo(Exception):
    """Rolls back an operator transition tried in a savepoint."""


def accepts(human_id: int, todo_id: str, action: str) -> bool:
    """Whether the operator statement behind ``action`` accepts the todo (then rolled back)."""
    call = {
        "claim": lifecycle.operator_claim,
        "extend": lifecycle.operator_extend,
        "retry": lifecycle.operator_retry,
        "complete": lifecycle.operator_complete,
        "fail": lifecycle.operator_fail,
        "release": lifecycle.operator_release,
        "cancel": lifecycle.operator_cancel,
    }[action]
    try:
        with transaction.atomic():
            call(human_id, todo_id)
            raise _Undo
    except _Undo:
        return True
    except LeaseConflict:
        return False


def test_the_operator_actions_are_what_the_operator_statements_accept(
    reached: dict[str, str], personas: Personas
) -> None:
    now: dt.datetime = db_now()
    todos = Todo.objects.select_related("endpoint").in_bulk(list(reached.values()))
    for name, todo_id in reached.items():
        todo = todos[todo_id]
        revoked = todo.endpoint.revoked_at is not None
        offered = states.operator_actions(todo, now, endpoint_revoked=revoked)
        accepted = {a for a in states.OPERATOR_ACTIONS if accepts(personas.alice.id, todo_id, a)}

        assert offered == TABLE[name].actions, name
        assert accepted == TABLE[name].actions, name
