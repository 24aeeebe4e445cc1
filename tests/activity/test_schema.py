"""The activity schema as PostgreSQL holds it: todo_activity's CHECKs, keys and indexes, the
cascade with its todo, and the columns activity adds to todos, humans and todo_attempts.

(The CHECK lists against the TextChoices, makemigrations and reversibility are checked with the
rest of the schema in tests/switchboard/test_schema.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import IntegrityError, transaction

from activity.models import ActorKind, Kind, TodoActivity
from attempts.models import TodoAttempt
from switchboard import runtime_settings
from switchboard.lib.sql import fetch_one
from switchboard.models import Human
from tests.activity.helpers import activity_seqs, add_activity
from tests.base import Personas
from tests.reach import DAY, set_finished_at
from todos import lifecycle, retention
from todos.models import Todo

pytestmark = pytest.mark.django_db


def _todo(personas: Personas, title: str = "with a trail") -> str:
    return lifecycle.create(personas.endpoint_a.id, queue="triage", title=title).id


def _finished(personas: Personas, title: str) -> str:
    todo_id = _todo(personas, title)
    lifecycle.claim(personas.endpoint_a.id, todo_id, owner="agent-a")
    lifecycle.complete(personas.endpoint_a.id, todo_id, owner="agent-a")
    return todo_id


def _refused(constraint: str, todo_id: str, seq: int, **columns: Any) -> None:
    with pytest.raises(IntegrityError) as excinfo, transaction.atomic():
        add_activity(todo_id, seq, **columns)
    assert constraint in str(excinfo.value)


# --- the row and its defaults -------------------------------------------------------------------


def test_a_row_takes_its_defaults_and_reads_back_through_the_model(personas: Personas) -> None:
    todo_id = _todo(personas)
    add_activity(todo_id, 1, message="looked at the logs")

    row = TodoActivity.objects.get(pk=(todo_id, 1))

    assert (row.kind, row.actor_kind, row.actor_ref) == (Kind.NOTE, ActorKind.ENDPOINT, "agent-a")
    assert (row.message, row.attempt_seq, row.truncated, row.detail) == (
        "looked at the logs",
        None,
        False,
        {},
    )
    at = fetch_one("SELECT now() AS now", {})
    assert at is not None and row.at == at["now"]  # DEFAULT now(), the transaction's instant


def test_seq_is_unique_per_todo_and_only_per_todo(personas: Personas) -> None:
    first, second = _todo(personas, "first"), _todo(personas, "second")
    add_activity(first, 1)
    add_activity(second, 1)

    _refused("todo_activity_pkey", first, 1)
    assert activity_seqs(first) == activity_seqs(second) == [1]


def test_a_row_for_an_unknown_todo_is_refused(personas: Personas) -> None:
    _refused("todo_activity_todo_id_fkey", "td_unknown", 1, endpoint_id=personas.endpoint_a.id)


def test_a_row_without_its_todos_endpoint_is_refused(personas: Personas) -> None:
    # Every writer copies the todo's (tests/activity/test_writers.py); the feed walks by it.
    _refused('"endpoint_id"', _todo(personas), 1, endpoint_id=None)


# --- CHECKs -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "constraint"),
    [("kind", "todo_activity_kind_check"), ("actor_kind", "todo_activity_actor_kind_check")],
)
def test_a_value_outside_the_list_is_refused(
    personas: Personas, column: str, constraint: str
) -> None:
    _refused(constraint, _todo(personas), 1, **{column: "bogus"})


@pytest.mark.parametrize(
    ("column", "cap", "constraint"),
    [
        ("actor_ref", 128, "todo_activity_actor_ref_check"),
        ("message", 512, "todo_activity_message_check"),
    ],
)
def test_text_is_capped_in_bytes_not_characters(
    personas: Personas, column: str, cap: int, constraint: str
) -> None:
    todo_id = _todo(personas)
    # "é" is two bytes in UTF-8: cap/2 of them fill the cap exactly, one more is over in bytes
    # while still under in characters.
    add_activity(todo_id, 1, **{column: "é" * (cap // 2)})

    _refused(constraint, todo_id, 2, **{column: "é" * (cap // 2) + "x"})
    assert activity_seqs(todo_id) == [1]


def test_detail_is_capped_at_4096_bytes_of_its_text_form(personas: Personas) -> None:
    todo_id = _todo(personas)
    # The text form of {"k": "<v>"} is 9 bytes around v.
    add_activity(todo_id, 1, detail={"k": "v" * (4096 - 9)})
    stored = fetch_one(
        "SELECT octet_length(detail::text) AS n FROM todo_activity WHERE todo_id = %(id)s",
        {"id": todo_id},
    )
    assert stored == {"n": 4096}

    _refused("todo_activity_detail_check", todo_id, 2, detail={"k": "v" * (4096 - 8)})


def test_a_null_message_is_allowed_and_a_null_actor_ref_is_not(personas: Personas) -> None:
    todo_id = _todo(personas)
    add_activity(todo_id, 1, kind="rung", actor_kind="system", actor_ref="doorbell", message=None)

    with pytest.raises(IntegrityError, match="actor_ref"), transaction.atomic():
        add_activity(todo_id, 2, actor_ref=None)


@pytest.mark.parametrize("kind", Kind.values)
def test_every_kind_the_model_names_is_accepted(personas: Personas, kind: str) -> None:
    todo_id = _todo(personas)
    for seq, actor_kind in enumerate(ActorKind.values, start=1):
        add_activity(todo_id, seq, kind=kind, actor_kind=actor_kind)

    assert activity_seqs(todo_id) == [1, 2, 3]


# --- indexes ----------------------------------------------------------------------------------


def _indexdef(name: str) -> str:
    row = fetch_one("SELECT indexdef FROM pg_indexes WHERE indexname = %(name)s", {"name": name})
    assert row is not None, f"{name} is missing"
    definition: str = row["indexdef"]
    return definition.replace(" ON public.", " ON ")


@pytest.mark.parametrize(
    ("name", "definition"),
    [
        (
            "idx_todo_activity_note",
            "CREATE INDEX idx_todo_activity_note ON todo_activity USING btree"
            " (todo_id, attempt_seq) WHERE (kind = 'note'::text)",
        ),
        (
            "idx_todo_activity_feed",
            "CREATE INDEX idx_todo_activity_feed ON todo_activity USING btree"
            " (endpoint_id, at DESC) WHERE (kind <> 'rung'::text)",
        ),
        (
            "idx_todo_attempts_feed",
            "CREATE INDEX idx_todo_attempts_feed ON todo_attempts USING btree"
            " (endpoint_id, ended_at DESC) WHERE (ended_at IS NOT NULL)",
        ),
        (
            "idx_todo_attempts_ended",
            "CREATE INDEX idx_todo_attempts_ended ON todo_attempts USING btree (ended_at DESC)"
            " WHERE ((ended_at IS NOT NULL) AND ((outcome)::text = ANY (ARRAY['completed'::text,"
            " 'failed'::text, 'lease_expired'::text, 'reaped'::text])))",
        ),
        (
            "todo_activity_pkey",
            "CREATE UNIQUE INDEX todo_activity_pkey ON todo_activity USING btree (todo_id, seq)",
        ),
    ],
)
def test_the_index_is_defined_as_its_query_needs(name: str, definition: str) -> None:
    assert _indexdef(name) == definition


def test_the_models_declare_the_indexes_the_migrations_create() -> None:
    # The model state carries them too, so makemigrations --check sees no difference.
    assert {index.name for index in TodoActivity._meta.indexes} == {
        "idx_todo_activity_note",
        "idx_todo_activity_feed",
    }
    assert {"idx_todo_attempts_ended", "idx_todo_attempts_feed"} <= {
        index.name for index in TodoAttempt._meta.indexes
    }


# --- the trail goes with its todo -------------------------------------------------------------


def test_retention_deletes_a_todos_activity_with_it(personas: Personas) -> None:
    old = _finished(personas, "old")
    kept = _finished(personas, "kept")
    # Finished past retention: move the row's timestamp, PostgreSQL's clock cannot be moved.
    set_finished_at(old, (runtime_settings.current().retention_days + 1) * DAY)
    for todo_id in (old, kept):
        add_activity(todo_id, 1)
        add_activity(todo_id, 2, kind="human_action", actor_kind="human", actor_ref="alice")

    result = retention.run()

    assert result.todos == 1
    assert not Todo.objects.filter(pk=old).exists()
    assert activity_seqs(old) == []
    assert activity_seqs(kept) == [1, 2]


def test_deleting_a_todo_through_the_orm_deletes_its_activity(personas: Personas) -> None:
    todo_id, other = _todo(personas, "deleted"), _todo(personas, "other")
    add_activity(todo_id, 1)
    add_activity(other, 1)

    Todo.objects.filter(pk=todo_id).delete()

    assert activity_seqs(todo_id) == []
    assert activity_seqs(other) == [1]


# --- the columns activity adds to other tables ------------------------------------------------


def test_a_new_todo_has_handed_out_no_activity_seq(personas: Personas) -> None:
    todo_id = _todo(personas)

    row = fetch_one("SELECT activity_seq FROM todos WHERE id = %(id)s", {"id": todo_id})

    assert row == {"activity_seq": 0}
    assert Todo.objects.get(pk=todo_id).activity_seq == 0


def test_a_new_attempt_has_dropped_no_notes(personas: Personas) -> None:
    todo_id = _todo(personas)
    lifecycle.claim(personas.endpoint_a.id, todo_id, owner="agent-a")

    row = fetch_one(
        "SELECT notes_dropped FROM todo_attempts WHERE todo_id = %(id)s", {"id": todo_id}
    )

    assert row == {"notes_dropped": 0}
    assert TodoAttempt.objects.get(todo_id=todo_id).notes_dropped == 0


def test_a_human_has_not_seen_the_feed_until_they_open_it(personas: Personas) -> None:
    row = fetch_one(
        "SELECT activity_seen_at FROM humans WHERE id = %(id)s", {"id": personas.alice.pk}
    )

    assert row == {"activity_seen_at": None}
    assert Human.objects.get(pk=personas.alice.pk).activity_seen_at is None


@pytest.mark.parametrize(
    ("table", "column", "data_type", "nullable", "default"),
    [
        ("todos", "activity_seq", "bigint", "NO", "0"),
        ("humans", "activity_seen_at", "timestamp with time zone", "YES", None),
        ("todo_attempts", "notes_dropped", "integer", "NO", "0"),
    ],
)
def test_the_added_column_has_the_designed_type_and_default(
    table: str, column: str, data_type: str, nullable: str, default: str | None
) -> None:
    row = fetch_one(
        """SELECT data_type, is_nullable, column_default FROM information_schema.columns
            WHERE table_schema = 'public'
              AND table_name = %(table)s AND column_name = %(column)s""",
        {"table": table, "column": column},
    )

    assert row == {"data_type": data_type, "is_nullable": nullable, "column_default": default}


def test_detail_round_trips_as_json(personas: Personas) -> None:
    todo_id = _todo(personas)
    detail = {"action": "retry", "from": "failed", "to": "pending"}
    add_activity(todo_id, 1, kind="human_action", actor_kind="human", detail=detail)

    stored = fetch_one(
        "SELECT detail FROM todo_activity WHERE todo_id = %(id)s AND seq = 1", {"id": todo_id}
    )

    assert stored is not None
    assert json.loads(stored["detail"]) == detail
    assert TodoActivity.objects.get(pk=(todo_id, 1)).detail == detail
