"""The schema as PostgreSQL holds it: migrations in step with the models, CHECK lists equal to the
TextChoices, the hot tables' one-column bounds as domains, reversible migrations, the queue
table's storage parameters, the claim index (its plans are in test_plans.py), and the deferred
one-open-attempt constraint."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, models, transaction
from django.db.migrations.executor import MigrationExecutor

from activity.models import ActorKind, Kind
from attempts.models import ClaimerKind, Disposition, Outcome
from switchboard.lib.sql import fetch_all, fetch_one, numbered
from switchboard.models import Verb
from tests.base import Personas
from todos import lifecycle
from todos.management.commands.sql import named as named_statements
from todos.models import (
    EventDisposition,
    MissedPolicy,
    PauseActor,
    PushState,
    SignatureScheme,
    State,
)

# The apps whose migrations hold hand-written SQL, latest first (reverse dependency order).
PROJECT_APPS = ("activity", "attempts", "todos", "switchboard")


# --- migrations and models --------------------------------------------------------------------


@pytest.mark.django_db
def test_makemigrations_finds_no_model_change_missing_from_the_migrations() -> None:
    out = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # --check exits 1 when a migration would be written
        pytest.fail(f"makemigrations --check found changes (exit {exc.code}):\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()


# --- CHECK lists equal the TextChoices --------------------------------------------------------


def _check_values(table: str, column: str) -> list[str]:
    """The literals of the one CHECK constraint that constrains ``table``'s ``column`` alone to a
    list of values (``col = ANY (ARRAY[...])`` or ``col <@ ARRAY[...]``): the table's, or the
    column's domain's (switchboard/lib/domains.py)."""
    rows = fetch_all(
        """
        SELECT c.conname, pg_get_constraintdef(c.oid) AS definition
          FROM pg_attribute a
          JOIN pg_constraint c
            ON (c.conrelid = a.attrelid AND cardinality(c.conkey) = 1 AND a.attnum = c.conkey[1])
            OR c.contypid = a.atttypid
         WHERE a.attrelid = %(table)s::regclass AND a.attname = %(column)s AND c.contype = 'c'
           AND pg_get_constraintdef(c.oid) LIKE '%%ARRAY[%%'
        """,
        {"table": table, "column": column},
    )
    assert len(rows) == 1, f"expected one value-list CHECK on {table}.{column}, found {rows}"
    return re.findall(r"'((?:[^']|'')*)'::text", rows[0]["definition"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("table", "column", "choices"),
    [
        ("todos", "state", State),
        ("events", "disposition", EventDisposition),
        ("sources", "scheme", SignatureScheme),
        ("todo_attempts", "outcome", Outcome),
        ("todo_attempts", "disposition", Disposition),
        ("todo_attempts", "claimer_kind", ClaimerKind),
        ("todo_activity", "kind", Kind),
        ("todo_activity", "actor_kind", ActorKind),
        ("endpoints", "verbs", Verb),
        ("push_attempts", "state", PushState),
        ("queue_pauses", "paused_by_kind", PauseActor),
        ("queue_pauses", "resumed_by_kind", PauseActor),
        ("schedules", "missed", MissedPolicy),
    ],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
def test_the_sql_check_list_equals_the_text_choices(
    table: str, column: str, choices: type[models.TextChoices]
) -> None:
    values = _check_values(table, column)
    assert len(values) == len(set(values))
    assert sorted(values) == sorted(choices.values)


@pytest.mark.django_db
def test_the_endpoint_verbs_check_has_its_documented_name() -> None:
    row = fetch_one(
        "SELECT pg_get_constraintdef(oid) AS definition FROM pg_constraint"
        " WHERE conrelid = 'endpoints'::regclass AND conname = 'endpoints_known_verbs'",
        {},
    )
    assert row is not None
    assert "verbs <@ ARRAY[" in row["definition"]


# --- migrations reverse to zero and apply again -----------------------------------------------


def _schema() -> dict[str, Any]:
    """What the migrations built: tables, columns, constraints, indexes, storage parameters."""
    return {
        "columns": fetch_all(
            """SELECT table_name, column_name, data_type, domain_name, is_nullable, column_default
                 FROM information_schema.columns WHERE table_schema = 'public'
                ORDER BY table_name, column_name""",
            {},
        ),
        "constraints": fetch_all(
            """SELECT conrelid::regclass::text AS tbl, conname, contype, condeferrable,
                      condeferred, pg_get_constraintdef(oid) AS definition
                 FROM pg_constraint WHERE connamespace = 'public'::regnamespace
                ORDER BY 1, 2""",
            {},
        ),
        "indexes": fetch_all(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1",
            {},
        ),
        "reloptions": fetch_all(
            """SELECT relname, reloptions FROM pg_class
                WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' ORDER BY 1""",
            {},
        ),
    }


def _public_tables() -> set[str]:
    rows = fetch_all("SELECT tablename FROM pg_tables WHERE schemaname = 'public'", {})
    return {row["tablename"] for row in rows}


def _migrate(targets: list[tuple[str, str | None]]) -> None:
    executor = MigrationExecutor(connection)  # a fresh loader reads what is applied now
    executor.migrate(targets)


def _latest() -> list[tuple[str, str]]:
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


@pytest.fixture
def restore_migrations() -> Iterator[None]:
    """Leave every app fully migrated, whatever the test did or where it failed."""
    yield
    _migrate(_latest())


@pytest.mark.django_db(transaction=True)
def test_all_migrations_reverse_to_zero_and_apply_again_to_the_same_schema(
    restore_migrations: None,
) -> None:
    before = _schema()
    assert {"todos", "todo_attempts", "todo_activity", "endpoints", "settings"} <= _public_tables()
    others = sorted({app for app, _ in _latest()} - set(PROJECT_APPS))

    for app in (*PROJECT_APPS, *others):
        _migrate([(app, None)])

    assert _public_tables() == {"django_migrations"}
    applied = MigrationExecutor(connection).loader.applied_migrations
    assert not applied, f"still applied: {sorted(applied)}"

    _migrate(_latest())

    assert _schema() == before


@pytest.mark.django_db(transaction=True)
def test_reapplying_todo_attempts_backfills_one_open_attempt_per_claimed_todo(
    personas: Personas, restore_migrations: None
) -> None:
    claimed = lifecycle.create(personas.endpoint_a.id, queue="triage", title="in flight")
    waiting = lifecycle.create(personas.endpoint_a.id, queue="triage", title="waiting")
    lifecycle.claim(personas.endpoint_a.id, claimed.id, owner="agent-a")
    attempts_migrations = [node for node in _latest() if node[0] == "attempts"]

    _migrate([("attempts", None)])
    assert "todo_attempts" not in _public_tables()
    _migrate(attempts_migrations)

    rows = fetch_all(
        "SELECT todo_id, seq, claimer_kind, owner, claimant, ended_at FROM todo_attempts", {}
    )
    assert rows == [
        {
            "todo_id": claimed.id,
            "seq": 1,
            "claimer_kind": "endpoint",
            "owner": "agent-a",
            "claimant": "migrated",
            "ended_at": None,
        }
    ]
    totals = {
        row["id"]: row["attempts_total"]
        for row in fetch_all("SELECT id, attempts_total FROM todos", {})
    }
    assert totals == {claimed.id: 1, waiting.id: 0}


@pytest.mark.django_db(transaction=True)
def test_reapplying_the_lease_copy_backfills_the_leases_in_flight(
    personas: Personas, restore_migrations: None
) -> None:
    ep = personas.endpoint_a.id
    fenced = lifecycle.create(ep, queue="triage", title="fenced")
    plain = lifecycle.create(ep, queue="triage", title="plain")
    again = lifecycle.create(ep, queue="triage", title="released, then claimed again")
    waiting = lifecycle.create(ep, queue="triage", title="waiting")
    lifecycle.claim(ep, fenced.id, owner="agent-a", require_fence=True)
    lifecycle.claim(ep, plain.id, owner="agent-a")
    lifecycle.heartbeat(ep, plain.id, owner="agent-a")
    first = lifecycle.claim(ep, again.id, owner="agent-a", require_fence=True)
    lifecycle.heartbeat(ep, again.id, owner="agent-a", lease_token=first.lease_token)
    lifecycle.release(ep, again.id, owner="agent-a", lease_token=first.lease_token)
    lifecycle.claim(ep, again.id, owner="agent-a", require_fence=True)
    before = _lease_copies()
    todos_migrations = [node for node in _latest() if node[0] == "todos"]

    _migrate([("todos", "0002_attempt_counters")])
    _migrate(todos_migrations)

    after = _lease_copies()
    assert after == before
    # Each copy is its open attempt's, NULL where the attempt has none, NULL with no holder.
    digest, beat = 0, 1
    assert after[fenced.id][digest] is not None and after[fenced.id][beat] is None
    assert after[plain.id][digest] is None and after[plain.id][beat] is not None
    assert after[again.id][digest] is not None and after[again.id][beat] is None
    assert after[waiting.id] == (None, None, None, None)
    for todo_id, (copy, copied_beat, held, held_beat) in after.items():
        assert (copy, copied_beat) == (held, held_beat), todo_id


@pytest.mark.django_db(transaction=True)
def test_reapplying_the_search_table_backfills_each_todos_text_and_moves_the_index(
    personas: Personas, restore_migrations: None
) -> None:
    ep = personas.endpoint_a.id
    pending = lifecycle.create(ep, queue="triage", title="Deploy", payload={"ref": "main"})
    done = lifecycle.create(ep, queue="triage", title="Lint", payload={"check": {"name": "ruff"}})
    lifecycle.claim(ep, done.id, owner="agent-a")
    lifecycle.complete(ep, done.id, owner="agent-a", summary="ok")
    before = fetch_all("SELECT todo_id, text FROM todo_search ORDER BY todo_id", {})
    assert [row["todo_id"] for row in before] == sorted([pending.id, done.id])

    _migrate([("todos", "0013_todo_search")])
    assert "todo_search" not in _public_tables()
    assert _index_names("todos") >= {"todos_search_idx"}
    _migrate([node for node in _latest() if node[0] == "todos"])

    assert fetch_all("SELECT todo_id, text FROM todo_search ORDER BY todo_id", {}) == before
    assert "todos_search_idx" not in _index_names("todos")
    assert _index_names("todo_search") == {"todo_search_pkey", "todo_search_text_idx"}


@pytest.mark.django_db(transaction=True)
def test_reapplying_the_endpoint_copies_backfills_every_row_and_attempt_in_batches(
    personas: Personas, restore_migrations: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """activity/migrations/0005_endpoint.py and attempts/migrations/0007_endpoint.py: reversed,
    the copies and the feed's indexes go (the Overview's index and the old activity index come
    back as they were); applied again, every row and attempt of two endpoints' todos gets its
    todo's endpoint, a batch at a time, and the column is NOT NULL again."""
    import importlib

    for name in ("activity.migrations.0005_endpoint", "attempts.migrations.0007_endpoint"):
        monkeypatch.setattr(importlib.import_module(name), "BATCH", 2)
    for ep, human in (
        (personas.endpoint_a.id, personas.alice),
        (personas.endpoint_b.id, personas.bob),
    ):
        for n in range(3):
            todo = lifecycle.create(ep, queue="triage", title=f"todo {n}")
            lifecycle.claim(ep, todo.id, owner="agent")
            lifecycle.heartbeat(ep, todo.id, owner="agent", note="a note")
            lifecycle.operator_release(human.id, todo.id, summary="by hand")
            lifecycle.operator_claim(human.id, todo.id)
    # Per todo: a note and two Board actions; two attempts, an agent's and its owner's.
    copies = """SELECT count(*) FILTER (WHERE x.endpoint_id = t.endpoint_id) AS same,
                       count(*) AS n
                  FROM {table} x JOIN todos t ON t.id = x.todo_id"""
    assert fetch_one(copies.format(table="todo_activity"), {}) == {"same": 18, "n": 18}
    assert fetch_one(copies.format(table="todo_attempts"), {}) == {"same": 12, "n": 12}
    before = _schema()

    _migrate([("activity", "0004_budget"), ("attempts", "0006_usage")])
    for table in ("todo_activity", "todo_attempts"):
        columns = fetch_all(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %(t)s",
            {"t": table},
        )
        assert "endpoint_id" not in {c["column_name"] for c in columns}
    assert _index_names("todo_activity") >= {"idx_todo_activity_at"}
    assert "idx_todo_activity_feed" not in _index_names("todo_activity")
    assert "idx_todo_attempts_feed" not in _index_names("todo_attempts")
    ended = fetch_one(
        "SELECT indexdef FROM pg_indexes WHERE indexname = 'idx_todo_attempts_ended'", {}
    )
    assert ended is not None and "outcome" not in ended["indexdef"]
    _migrate(_latest())

    assert fetch_one(copies.format(table="todo_activity"), {}) == {"same": 18, "n": 18}
    assert fetch_one(copies.format(table="todo_attempts"), {}) == {"same": 12, "n": 12}
    assert _schema() == before


def _index_names(table: str) -> set[str]:
    rows = fetch_all("SELECT indexname FROM pg_indexes WHERE tablename = %(t)s", {"t": table})
    return {row["indexname"] for row in rows}


def _lease_copies() -> dict[str, tuple[Any, ...]]:
    """Per todo: its two copies, then the open attempt's digest and last heartbeat write."""
    rows = fetch_all(
        """SELECT t.id, t.lease_token_hash AS copy, t.attempt_heartbeat_at AS copied_beat,
                  a.lease_token_hash AS held, a.last_heartbeat_at AS held_beat
             FROM todos t
             LEFT JOIN todo_attempts a
               ON a.todo_id = t.id AND a.seq = t.attempts_total AND a.ended_at IS NULL""",
        {},
    )
    return {
        row["id"]: tuple(
            None if v is None else bytes(v) if isinstance(v, memoryview) else v
            for v in (row["copy"], row["copied_beat"], row["held"], row["held_beat"])
        )
        for row in rows
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("column", "value"),
    [("lease_token_hash", "decode(repeat('ab', 32), 'hex')"), ("attempt_heartbeat_at", "now()")],
)
def test_a_todo_nobody_holds_cannot_carry_a_lease_copy(
    personas: Personas, column: str, value: str
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="triage", title="waiting")

    with pytest.raises(IntegrityError) as excinfo, transaction.atomic():
        fetch_all(f"UPDATE todos SET {column} = {value} WHERE id = %(id)s", {"id": todo.id})
    assert "todos_lease_copy_held" in str(excinfo.value)


# --- the hot tables' one-column bounds are domains ----------------------------------------------

# Table CHECKs on one column left on the hot tables, each for a reason
# (todos/migrations/0026_check_domains.py): the id is every other table's foreign key, the cost
# cap a numeric with its own precision.
ONE_COLUMN_CHECKS_KEPT = {"todos_id_check", "todos_max_cost_usd_check"}


@pytest.mark.django_db
@pytest.mark.parametrize("table", ["todos", "todo_attempts"])
def test_the_hot_tables_keep_table_checks_only_for_rules_over_several_columns(table: str) -> None:
    """Every claim and complete writes both tables, and a table CHECK is parsed and prepared again
    by each such statement: a bound on one column belongs to its domain
    (switchboard/lib/domains.py, docs/decisions/0043-check-domains.md)."""
    rows = fetch_all(
        """SELECT conname FROM pg_constraint
            WHERE conrelid = %(table)s::regclass AND contype = 'c' AND cardinality(conkey) = 1""",
        {"table": table},
    )
    assert {r["conname"] for r in rows} <= ONE_COLUMN_CHECKS_KEPT


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("table", "assignment", "domain"),
    [
        ("todos", "state = 'done'", "todo_state"),
        ("todos", "queue = ''", "todo_queue"),
        ("todos", "queue = repeat('q', 129)", "todo_queue"),
        ("todos", "title = repeat('t', 1025)", "todo_title"),
        ("todos", "dedupe_key = ''", "todo_dedupe_key"),
        ("todos", "priority = 1001", "todo_priority"),
        ("todos", "max_attempts = 0", "todo_max_attempts"),
        ("todos", "lease_ttl_seconds = 9", "todo_lease_ttl"),
        ("todos", "run_timeout_seconds = 9", "todo_run_timeout"),
        ("todos", "attempt = -1", "todo_count"),
        ("todos", "ring_attempts = -1", "todo_count"),
        ("todos", "lease_token_hash = '\\x00'", "todo_token_hash"),
        ("todo_attempts", "outcome = 'finished'", "attempt_outcome"),
        ("todo_attempts", "disposition = 'gone'", "attempt_disposition"),
        ("todo_attempts", "claimer_kind = 'human'", "attempt_claimer_kind"),
        ("todo_attempts", "claimant = repeat('c', 129)", "attempt_claimant"),
        ("todo_attempts", "summary = repeat('s', 2049)", "attempt_summary"),
        ("todo_attempts", "artifact = repeat('a', 513)", "attempt_artifact"),
        ("todo_attempts", "lease_token_hash = '\\x00'", "attempt_token_hash"),
        ("todo_attempts", "trace_id = '\\x00'", "attempt_trace_id"),
    ],
)
def test_a_domain_refuses_what_the_table_check_refused(
    personas: Personas, table: str, assignment: str, domain: str
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="triage", title="bounded")
    lifecycle.claim(personas.endpoint_a.id, todo.id, owner="agent-a")
    key = "id" if table == "todos" else "todo_id"

    with pytest.raises(IntegrityError) as excinfo, transaction.atomic():
        fetch_all(f"UPDATE {table} SET {assignment} WHERE {key} = %(id)s", {"id": todo.id})
    assert f'domain {domain} violates check constraint "{domain}_check"' in str(excinfo.value)


@pytest.mark.django_db
def test_every_statement_types_each_parameter_one_way() -> None:
    """psycopg sends a Python string untyped and PostgreSQL deduces its type from its uses; a
    parameter written to a domain column and compared as text elsewhere deduces two and the
    statement is refused at its first run (create.sql types its queue once, ``::text``). Each
    statement ``manage.py sql`` names, the writers of the domains' columns among them, prepares
    with every parameter untyped."""
    connection.ensure_connection()
    raw = connection.connection
    assert raw is not None
    refused = {}
    for name, sql in named_statements().items():
        text, _ = numbered(sql)
        with transaction.atomic():
            try:
                psycopg.RawCursor(raw).execute(f"PREPARE untyped_probe AS {text}")
            except psycopg.Error as error:
                refused[name] = str(error).splitlines()[0]
                transaction.set_rollback(True)
            else:
                psycopg.RawCursor(raw).execute("DEALLOCATE untyped_probe")
    assert not refused


# --- the queue table --------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_todos_table_leaves_room_for_hot_updates() -> None:
    row = fetch_one("SELECT reloptions FROM pg_class WHERE oid = 'todos'::regclass", {})
    assert row is not None
    options = dict(option.split("=", 1) for option in row["reloptions"] or [])
    assert options["fillfactor"] == "80"
    assert float(options["autovacuum_vacuum_scale_factor"]) <= 0.05


@pytest.mark.django_db
def test_the_claim_index_is_per_queue_over_claimable_rows_only() -> None:
    rows = fetch_all(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'todos'"
        " AND indexname IN ('todos_claim_queue_idx', 'todos_claimable_idx')",
        {},
    )
    definitions = {row["indexname"]: row["indexdef"] for row in rows}
    # It replaced the per-endpoint index, which nothing reads any more (migrations/0006).
    assert list(definitions) == ["todos_claim_queue_idx"], definitions
    definition = definitions["todos_claim_queue_idx"]
    # In claim order: higher priority first, then older (migrations/0015).
    assert "USING btree (endpoint_id, queue, priority DESC, created_at, id)" in definition
    where = definition.split(" WHERE ", 1)[1]
    for state in ("pending", "claimed", "failed"):
        assert f"'{state}'" in where
    for state in ("completed", "canceled", "rejected"):
        assert f"'{state}'" not in where


# --- the one-open-attempt constraint ----------------------------------------------------------


@pytest.mark.django_db
def test_one_open_attempt_per_todo_is_a_deferred_exclusion_constraint() -> None:
    row = fetch_one(
        """SELECT contype, condeferrable, condeferred, pg_get_constraintdef(oid) AS definition
             FROM pg_constraint
            WHERE conrelid = 'todo_attempts'::regclass AND conname = 'todo_attempts_one_open'""",
        {},
    )
    assert row is not None, "todo_attempts_one_open is missing"
    assert row["contype"] == "x"
    assert row["condeferrable"] is True
    assert row["condeferred"] is True
    assert "(todo_id WITH =)" in row["definition"]
    assert "WHERE ((ended_at IS NULL))" in row["definition"]


def _check_deferred_constraints() -> None:
    with connection.cursor() as cur:
        cur.execute("SET CONSTRAINTS ALL IMMEDIATE")


@pytest.mark.django_db
def test_a_second_open_attempt_is_refused_at_commit_not_at_insert(personas: Personas) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="triage")
    claim = lifecycle.claim(personas.endpoint_a.id, todo.id, owner="agent-a")
    assert claim.attempt_seq == 1

    savepoint = transaction.savepoint()
    with connection.cursor() as cur:
        # Accepted while deferred (an immediate constraint would raise here)...
        cur.execute(
            """INSERT INTO todo_attempts (todo_id, endpoint_id, seq, attempt, claimer_kind,
                                          owner, lease_expires_at)
               VALUES (%s, %s, 2, 1, 'endpoint', 'intruder', now())""",
            [todo.id, personas.endpoint_a.id],
        )
    # ...and refused when checked, as at COMMIT.
    with pytest.raises(IntegrityError, match="todo_attempts_one_open"):
        _check_deferred_constraints()
    transaction.savepoint_rollback(savepoint)
