"""The search text's table (todos/migrations/0014_todo_search_table.py): written once by the
statement that creates a todo, never by a later transition, gone with its todo.

The lifecycle's transitions are held to "never touches todo_search" by the table's own write
counters for the test's transaction (``pg_stat_xact_user_tables``) and by the row's place
(``ctid``: an update, HOT or not, writes a new version elsewhere).
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from switchboard.lib.sql import fetch_all, fetch_one
from tests.base import Personas
from tests.reach import DAY, claimed, new_todo, set_finished_at
from tests.test_writers import _strip_sql_comments, product_files
from todos import lifecycle

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def search_row(todo_id: str) -> dict[str, object] | None:
    return fetch_one(
        "SELECT ctid::text AS place, text FROM todo_search WHERE todo_id = %(id)s", {"id": todo_id}
    )


def writes() -> tuple[int, int, int]:
    """Rows of todo_search inserted, updated and deleted so far in this transaction."""
    row = fetch_one(
        """SELECT n_tup_ins AS ins, n_tup_upd AS upd, n_tup_del AS del
             FROM pg_stat_xact_user_tables WHERE relname = 'todo_search'""",
        {},
    )
    assert row is not None
    return row["ins"], row["upd"], row["del"]


def test_create_writes_the_todos_search_text_once(personas: Personas) -> None:
    before = writes()
    todo = new_todo(
        personas.endpoint_a.id,
        title="Deploy to staging",
        payload={"repository": {"full_name": "example/shop"}, "ref": "refs/heads/main", "n": 3},
    )

    row = search_row(todo.id)
    assert row is not None
    expected = fetch_one(
        "SELECT todo_search_text(id, title, payload) AS text FROM todos WHERE id = %(id)s",
        {"id": todo.id},
    )
    assert expected is not None and row["text"] == expected["text"]
    assert row["text"] == f"{todo.id} Deploy to staging refs/heads/main example/shop"
    ins, upd, dele = writes()
    assert (ins - before[0], upd - before[1], dele - before[2]) == (1, 0, 0)


def test_a_create_refused_writes_no_search_text(personas: Personas) -> None:
    lifecycle.revoke_endpoint(personas.bob.id, personas.endpoint_b.id)
    before = writes()

    with pytest.raises(lifecycle.InvalidInput):
        new_todo(personas.endpoint_b.id, title="never made")

    assert writes() == before
    assert fetch_all("SELECT 1 AS x FROM todo_search WHERE text LIKE '%%never made%%'", {}) == []


def test_claims_heartbeats_and_reports_never_touch_the_search_text(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    done = new_todo(ep, title="to complete", payload={"check": "lint"})
    failed = new_todo(ep, title="to fail", payload={"check": "tests"})
    places = {todo.id: search_row(todo.id) for todo in (done, failed)}
    before = writes()

    lifecycle.claim(ep, done.id, owner="worker-1")
    lifecycle.heartbeat(ep, done.id, owner="worker-1")
    lifecycle.complete(ep, done.id, owner="worker-1", summary="done")
    lifecycle.claim(ep, failed.id, owner="worker-1")
    lifecycle.fail(ep, failed.id, owner="worker-1", summary="flaky")

    assert writes() == before
    assert {todo_id: search_row(todo_id) for todo_id in places} == places


def test_no_index_on_todos_computes_the_search_text() -> None:
    # Such an index would make every claim and report compute the text and insert its trigrams.
    rows = fetch_all(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'todos'"
        " AND indexdef LIKE '%%todo_search_text%%'",
        {},
    )
    assert rows == []
    row = fetch_one("SELECT indexdef FROM pg_indexes WHERE indexname = 'todo_search_text_idx'", {})
    assert row is not None
    assert "ON public.todo_search USING gin (text gin_trgm_ops)" in row["indexdef"]


def test_retention_deletes_a_todos_search_text_with_it(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    old = claimed(ep, title="finished long ago")
    lifecycle.complete(ep, old.todo.id, owner="worker-1", summary="done")
    set_finished_at(old.todo.id, 40 * DAY)
    kept = new_todo(ep, title="still pending")

    out = io.StringIO()
    call_command("retention", stdout=out)

    assert "deleted 1 todos" in out.getvalue()
    assert search_row(old.todo.id) is None
    assert search_row(kept.id) is not None


# --- who writes todo_search -------------------------------------------------------------------

_INSERT_TODOS = re.compile(r"\bINSERT\s+INTO\s+todos\b", re.IGNORECASE)
_WRITE_SEARCH = re.compile(
    r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|MERGE\s+INTO|TRUNCATE(?:\s+TABLE)?)\s+todo_search\b",
    re.IGNORECASE,
)


def test_every_statement_that_creates_a_todo_writes_its_search_text() -> None:
    # The product's statements (benchmarks fill todos for claims, never for a search).
    creating = []
    for path in product_files(".sql"):
        text = _strip_sql_comments(path.read_text())
        if _INSERT_TODOS.search(text):
            creating.append(path.relative_to(ROOT).as_posix())
            assert re.search(r"\bINSERT\s+INTO\s+todo_search\b", text, re.IGNORECASE), path
    assert creating == ["todos/sql/create.sql"]


def test_only_the_create_statement_writes_todo_search() -> None:
    writers = []
    for path in product_files(".sql") + product_files(".py"):
        text = path.read_text()
        if path.suffix == ".sql":
            text = _strip_sql_comments(text)
        if _WRITE_SEARCH.search(text):
            writers.append(path.relative_to(ROOT).as_posix())
    # create.sql writes it; forgetting a todo (activity/forget.py) deletes it with the rest.
    assert sorted(writers) == ["todos/sql/_forget_arms.sql", "todos/sql/create.sql"]
