"""The span admin (read-only, under the Todo admin) and the schema the models mirror."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.utils import quote
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.urls import reverse

from otlp.models import StatusCode
from otlp.store import store
from otlp.translate import collect, translate
from tests.base import Personas
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, trace_id

pytestmark = pytest.mark.django_db


def test_the_span_list_shows_spans_linked_to_their_todo_and_offers_no_writes(
    client: Client, personas: Personas
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace := trace_id())
    (candidate,) = collect(request([SpanSpec(trace, name="execute_tool grep")])).candidates
    store([translate(candidate, claim.todo.id, 1, False)], set(), attempt_cap=9, todo_cap=9)
    client.force_login(personas.admin)

    page = client.get(reverse("admin:otlp_todospan_changelist")).content.decode()
    todos = client.get(reverse("admin:todos_todo_changelist")).content.decode()

    assert "execute_tool grep" in page
    assert reverse("admin:todos_todo_change", args=[quote(claim.todo.id)]) in page
    assert 'name="action"' not in page  # no bulk actions, delete included
    assert reverse("admin:otlp_todospan_changelist") in todos


def test_the_span_list_is_for_staff_only(client: Client, personas: Personas) -> None:
    client.force_login(personas.alice)

    assert client.get(reverse("admin:otlp_todospan_changelist")).status_code == 302


def test_the_status_choices_equal_the_tables_check() -> None:
    with connection.cursor() as cur:
        cur.execute(
            """SELECT pg_get_constraintdef(oid) FROM pg_constraint
                WHERE conrelid = 'todo_spans'::regclass AND contype = 'c'
                  AND pg_get_constraintdef(oid) LIKE '%%status_code%%'"""
        )
        (definition,) = cur.fetchone()
    assert set(re.findall(r"'(\w+)'::text", definition)) == set(StatusCode.values)


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("trace_id", "'\\x00'::bytea"),
        ("span_id", "'\\x0102'::bytea"),
        ("name", "repeat('x', 257)"),
        ("end_at", "timestamptz 'epoch'"),
        ("attributes", "jsonb_build_object('k', repeat('x', 16400))"),
    ],
)
def test_the_table_refuses_what_the_translator_never_makes(
    personas: Personas, column: str, value: str
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    columns = {
        "trace_id": "'\\x000102030405060708090a0b0c0d0e0f'::bytea",
        "span_id": "'\\x0001020304050607'::bytea",
        "name": "'n'",
        "end_at": "now()",
        "attributes": "'{}'::jsonb",
        column: value,
    }
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cur:
        cur.execute(
            f"""INSERT INTO todo_spans (todo_id, trace_id, span_id, name, kind, category,
                                        start_at, end_at, attributes)
                VALUES (%s, {columns["trace_id"]}, {columns["span_id"]}, {columns["name"]},
                        'internal', 'other', now() - interval '1 second', {columns["end_at"]},
                        {columns["attributes"]})""",
            [claim.todo.id],
        )


def _indexdef(name: str) -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [name])
        (definition,) = cur.fetchone()
    return str(definition)


@pytest.mark.parametrize(
    ("name", "definition"),
    [
        (
            "idx_todo_attempts_trace",
            "CREATE INDEX idx_todo_attempts_trace ON public.todo_attempts USING btree (trace_id)"
            " WHERE (trace_id IS NOT NULL)",
        ),
        (
            # A partitioned index (ON ONLY the parent): each day's partition has its own copy.
            "idx_todo_spans_attempt",
            "CREATE INDEX idx_todo_spans_attempt ON ONLY public.todo_spans USING btree"
            " (todo_id, attempt_seq, start_at)",
        ),
        (
            "idx_todo_trace_bindings_trace",
            "CREATE INDEX idx_todo_trace_bindings_trace ON public.todo_trace_bindings USING btree"
            " (trace_id)",
        ),
    ],
)
def test_the_index_is_defined_as_its_query_needs(name: str, definition: str) -> None:
    assert _indexdef(name) == definition


def test_the_models_declare_the_indexes_the_migrations_create() -> None:
    from attempts.models import TodoAttempt
    from otlp.models import TodoSpan, TodoTraceBinding

    assert "idx_todo_attempts_trace" in {i.name for i in TodoAttempt._meta.indexes}
    assert [i.name for i in TodoSpan._meta.indexes] == ["idx_todo_spans_attempt"]
    assert [i.name for i in TodoTraceBinding._meta.indexes] == ["idx_todo_trace_bindings_trace"]
