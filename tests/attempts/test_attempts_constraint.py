"""The deferred one-open-attempt constraint (todo_attempts_one_open) and how it surfaces.

It cannot fire unless there is a bug, so these tests plant the bug: a second open attempt
inserted by hand. Under a plain test nothing commits, so SET CONSTRAINTS ALL IMMEDIATE makes it
fire; the transaction=True tests let it fire at a real COMMIT.
"""

from __future__ import annotations

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction
from psycopg import errors

from switchboard.lib.errors import AttemptInvariantViolated
from switchboard.lib.sql import fetch_all
from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.reach import OWNER, claimed, expire_lease, new_todo
from tests.rows import attempt_rows, open_attempts, todo_row
from todos import lifecycle

PLANT = (
    "INSERT INTO todo_attempts (todo_id, endpoint_id, seq, attempt, claimer_kind, owner,"
    " lease_expires_at)"
    " SELECT id, endpoint_id, %(seq)s, 1, 'endpoint', 'planted', now() + interval '1 hour'"
    " FROM todos WHERE id = %(id)s"
)


def _plant(todo_id: str, seq: int = 99) -> None:
    fetch_all(PLANT, {"id": todo_id, "seq": seq})


def _immediate() -> None:
    with connection.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_a_second_open_attempt_is_let_in_and_fires_at_set_constraints_immediate(
    personas: Personas,
) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id

    def plant_then_check() -> None:
        with transaction.atomic():
            _plant(todo_id)  # deferred: the insert itself is accepted
            assert len(open_attempts(todo_id)) == 2
            _immediate()

    with pytest.raises(IntegrityError) as excinfo:
        plant_then_check()

    cause = excinfo.value.__cause__
    assert isinstance(cause, errors.ExclusionViolation)
    assert cause.diag.constraint_name == "todo_attempts_one_open"
    assert todo_id in (cause.diag.message_detail or "")
    assert len(open_attempts(todo_id)) == 1  # the savepoint rolled the plant back


def test_a_closed_attempt_beside_an_open_one_satisfies_the_constraint(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    expire_lease(todo_id)
    lifecycle.claim(ep, todo_id, owner="worker-2")

    _immediate()  # raises if the takeover left two open attempts

    assert [a["ended_at"] is None for a in attempt_rows(todo_id)] == [False, True]


def test_a_takeover_passes_the_constraint_checked_at_the_end_of_its_statement(
    personas: Personas,
) -> None:
    # Checked immediately, the constraint still sees only the statement's end result: the
    # takeover's close and open land together whatever order its CTEs ran in.
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    expire_lease(todo_id)
    _immediate()

    result = lifecycle.claim_next(ep, ["default"], owner="worker-2")

    assert result is not None and result.took_over is True
    assert len(open_attempts(todo_id)) == 1


def test_a_transition_that_would_open_a_second_attempt_raises_the_invariant_error(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep)
    _plant(todo.id)  # an open attempt on a pending todo: the claim will not close it
    _immediate()

    with pytest.raises(AttemptInvariantViolated) as excinfo, transaction.atomic():
        lifecycle.claim_next(ep, ["default"], owner=OWNER)

    assert excinfo.value.todo_id == todo.id
    assert excinfo.value.code == "internal"
    assert todo.id in str(excinfo.value)
    assert todo_row(todo.id)["state"] == "pending"
    assert [a["seq"] for a in attempt_rows(todo.id)] == [99]


@pytest.mark.django_db(transaction=True)
def test_the_constraint_fires_at_commit(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id

    with raw_connection() as conn:
        conn.execute(PLANT, {"id": todo_id, "seq": 99})  # accepted: the check waits for COMMIT
        with pytest.raises(errors.ExclusionViolation) as excinfo:
            conn.commit()

    assert excinfo.value.diag.constraint_name == "todo_attempts_one_open"
    assert [a["seq"] for a in attempt_rows(todo_id)] == [1]


@pytest.mark.django_db(transaction=True)
def test_check_commit_names_the_todo_when_the_constraint_fires(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id

    with pytest.raises(AttemptInvariantViolated) as excinfo:
        lifecycle.check_commit(lambda: _plant(todo_id))

    assert excinfo.value.todo_id == todo_id
    assert isinstance(excinfo.value.__cause__, IntegrityError)
    assert isinstance(excinfo.value.__cause__.__cause__, errors.ExclusionViolation)
    assert [a["seq"] for a in attempt_rows(todo_id)] == [1]
    assert todo_row(todo_id)["state"] == "claimed"


@pytest.mark.django_db(transaction=True)
def test_check_commit_commits_a_sound_transaction_and_returns_its_value(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep)

    result = lifecycle.check_commit(lambda: lifecycle.claim(ep, todo.id, owner=OWNER))

    assert result.attempt_seq == 1
    with raw_connection() as other:  # committed: another connection sees it
        row = other.execute("SELECT state FROM todos WHERE id = %s", [todo.id]).fetchone()
    assert row == ("claimed",)


@pytest.mark.django_db(transaction=True)
def test_an_autocommit_transition_maps_the_constraint_to_the_invariant_error(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep)
    with raw_connection() as conn:
        conn.execute(PLANT, {"id": todo.id, "seq": 99})  # one open attempt: commits fine

    with pytest.raises(AttemptInvariantViolated) as excinfo:
        lifecycle.claim(ep, todo.id, owner=OWNER)

    assert excinfo.value.todo_id == todo.id
    assert todo_row(todo.id)["state"] == "pending"
    assert [a["seq"] for a in attempt_rows(todo.id)] == [99]


def test_other_integrity_errors_are_not_mistaken_for_the_invariant(personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id).todo.id

    with pytest.raises(IntegrityError) as excinfo:
        lifecycle.check_commit(lambda: _plant(todo_id, seq=1))  # duplicate primary key

    assert not isinstance(excinfo.value, AttemptInvariantViolated)
    assert isinstance(excinfo.value.__cause__, psycopg.errors.UniqueViolation)
