"""Forgetting a todo (activity/forget.py): its content is gone from every table that holds any of
it (its alerts' too), a tombstone stays, only the owner's finished todos are forgotten, and
neither forget nor retention leaves a row that points at a todo that is not there."""

from __future__ import annotations

import datetime as dt
import io
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from activity import forget
from alerts import channels, evaluate, sweep
from alerts.models import Alert, RuleKind
from mcp_server import registry
from otlp import ingest
from switchboard.lib.sql import fetch_all, fetch_one
from switchboard.scope import Scope
from tests.base import Personas
from tests.factories import SourceFactory
from tests.otlp.helpers import PROTOBUF, SpanSpec, request, trace_id
from tests.reach import OWNER, new_todo
from todos import lifecycle, retention
from todos.models import Event, Todo

pytestmark = pytest.mark.django_db

SECRET = "hunter2-do-not-keep"


def tables_with_a_todo_id() -> list[str]:
    """Every table with a ``todo_id`` column: each one refers to a todo (FK or not)."""
    rows = fetch_all(
        "SELECT table_name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND column_name = 'todo_id'"
        " AND table_name IN (SELECT tablename FROM pg_tables WHERE schemaname = current_schema())"
        " ORDER BY table_name",
        {},
    )
    return [r["table_name"] for r in rows]


def rows_of(todo_id: str) -> dict[str, list[str]]:
    """Each todo-referencing table's rows for ``todo_id``, as JSON text; the todo's own and its
    delivery's too."""
    found = {
        table: [
            r["row"]
            for r in fetch_all(
                f"SELECT row_to_json(x)::text AS row FROM {table} x WHERE x.todo_id = %(id)s",
                {"id": todo_id},
            )
        ]
        for table in tables_with_a_todo_id()
    }
    found["todos"] = [
        r["row"]
        for r in fetch_all(
            "SELECT row_to_json(t)::text AS row FROM todos t WHERE t.id = %(id)s", {"id": todo_id}
        )
    ]
    found["events"] = [
        r["row"]
        for r in fetch_all(
            "SELECT row_to_json(e)::text AS row FROM events e"
            " WHERE e.id = (SELECT event_id FROM todos WHERE id = %(id)s)",
            {"id": todo_id},
        )
    ]
    return found


def lived(p: Personas) -> str:
    """A todo that went through everything that leaves content behind: dead-lettered (its
    alert raised on alice's channel), retried, then completed."""
    channel, _ = channels.add_channel(p.alice, email="ops@example.com")  # hears dead letters
    # Made now, as the test's transaction began: the dead letter below is not before it.
    channel.rules.update(created_at=channel.created_at - dt.timedelta(minutes=1))
    source = SourceFactory(owner=p.alice, slug="gh")
    event = Event.objects.create(
        source=source,
        delivery_id="d-1",
        headers={"x-note": SECRET},
        payload={"secret": SECRET},
        disposition="routed",
    )
    ep = p.endpoint_a.id
    todo = new_todo(
        ep,
        title=f"rotate {SECRET}",
        payload={"secret": SECRET},
        work_order=f"use {SECRET}",
        event_id=event.id,
        dedupe_key=f"k-{SECRET}",
        max_attempts=1,
    )
    # The claimant is the agent's name for itself: like the owner, part of who tried, kept.
    lifecycle.claim(ep, todo.id, owner=OWNER, claimant="bot/run-1")
    lifecycle.heartbeat(ep, todo.id, owner=OWNER, note=f"working on {SECRET}")
    lifecycle.interrupt(
        ep, todo.id, owner=OWNER, state="input-required", input_request={"q": SECRET}
    )
    lifecycle.resume(p.alice.id, todo.id, response={"a": SECRET})
    trace = trace_id()
    spans = [SpanSpec(trace, name=SECRET, attributes={"switchboard.todo.id": todo.id})]
    outcome = ingest.ingest(ep, request(spans).SerializeToString(), PROTOBUF, None, 1 << 20)
    assert outcome.accepted == 1
    lifecycle.fail(ep, todo.id, owner=OWNER, summary=f"stuck on {SECRET}", retryable=False)
    sweep.apply(RuleKind.DEAD_LETTER, evaluate.read(RuleKind.DEAD_LETTER))
    (alert,) = Alert.objects.filter(todo_id=todo.id)
    assert SECRET in alert.summary and SECRET in alert.detail["title"]
    lifecycle.retry(p.alice.id, todo.id)
    lifecycle.claim(ep, todo.id, owner=OWNER, claimant="bot/run-2")
    lifecycle.complete(
        ep,
        todo.id,
        owner=OWNER,
        summary=f"done with {SECRET}",
        result={"secret": SECRET},
        artifact=f"https://files.example/{SECRET}",
    )
    return todo.id


def test_a_forgotten_todo_keeps_a_tombstone_and_nothing_of_its_content(personas: Personas) -> None:
    todo_id = lived(personas)
    before = rows_of(todo_id)
    assert any(SECRET in row for rows in before.values() for row in rows)
    assert before["todo_spans"] and before["todo_trace_bindings"] and before["todo_search"]
    assert any(SECRET in row for row in before["alerts"])

    assert forget.forget(personas.alice.id, [todo_id]) == (todo_id,)

    after = rows_of(todo_id)
    leaks = {table: rows for table, rows in after.items() if any(SECRET in r for r in rows)}
    assert leaks == {}
    assert after["todo_spans"] == after["todo_trace_bindings"] == after["todo_search"] == []
    todo = Todo.objects.get(id=todo_id)
    assert (todo.state, todo.queue, todo.endpoint_id) == (
        "completed",
        "default",
        personas.endpoint_a.id,
    )
    assert todo.attempts_total == 2 and todo.finished_at is not None
    assert todo.forgotten_at is not None and todo.forgotten_by == f"human:{personas.alice.id}"
    assert (todo.title, todo.payload, todo.result, todo.input_request) == ("", {}, None, None)
    attempts = fetch_all(
        "SELECT outcome, summary, artifact FROM todo_attempts WHERE todo_id = %(id)s ORDER BY seq",
        {"id": todo_id},
    )
    assert [(a["outcome"], a["summary"], a["artifact"]) for a in attempts] == [
        ("failed", None, None),
        ("completed", None, None),
    ]
    actions = fetch_all(
        "SELECT kind, detail->>'action' AS action FROM todo_activity WHERE todo_id = %(id)s"
        " ORDER BY seq",
        {"id": todo_id},
    )
    assert actions[-1] == {"kind": "human_action", "action": "forget"}
    assert len(actions) >= 3  # the note, the interrupt and resume rows stay, emptied
    # Its alert stays, saying what happened without what the todo was.
    (alert,) = Alert.objects.filter(todo_id=todo_id)
    assert (alert.kind, alert.state) == ("dead_letter", "event")
    assert alert.summary == (
        f"Todo {todo_id} dead-lettered on agent-a/default after 1 attempt(s);"
        " the todo was forgotten"
    )


def test_only_the_owner_s_finished_todos_are_forgotten_and_each_once(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    pending = new_todo(ep).id
    done = new_todo(ep).id
    lifecycle.claim(ep, done, owner=OWNER)
    lifecycle.complete(ep, done, owner=OWNER)

    assert forget.forget(personas.bob.id, [done]) == ()  # not bob's
    assert forget.forget(personas.alice.id, [pending, done, "td_nope"]) == (done,)
    assert forget.forget(personas.alice.id, [done]) == ()  # already
    assert Todo.objects.get(id=pending).forgotten_at is None


def orphans(table: str) -> int:
    row = fetch_one(
        f"SELECT count(*) AS n FROM {table} x WHERE x.todo_id IS NOT NULL"
        " AND NOT EXISTS (SELECT 1 FROM todos t WHERE t.id = x.todo_id)",
        {},
    )
    assert row is not None
    return int(row["n"])


def test_forget_and_retention_leave_no_row_pointing_at_a_missing_todo(personas: Personas) -> None:
    # Tables without a foreign key (mcp_tasks) are not emptied by the test flush: count what
    # earlier tests left, and require that this test adds none.
    before = {table: orphans(table) for table in tables_with_a_todo_id()}
    todo_id = lived(personas)
    other = new_todo(personas.endpoint_a.id)
    lifecycle.cancel(Scope.of_human(personas.alice.id), other.id)
    for submitted in (todo_id, other.id):  # as if a requester had submitted both over MCP
        registry.record(submitted, personas.endpoint_a.id, b"k" * 32, None)
    forget.forget(personas.alice.id, [todo_id])
    fetch_all(
        "UPDATE todos SET finished_at = now() - interval '400 days' WHERE id = ANY(%(ids)s)",
        {"ids": [todo_id, other.id]},
    )
    retention.run()

    assert not Todo.objects.filter(id__in=[todo_id, other.id]).exists()
    assert {table: orphans(table) for table in tables_with_a_todo_id()} == before


def test_forget_erases_the_spans_in_every_partition_they_sit_in(personas: Personas) -> None:
    todo_id = lived(personas)
    day = fetch_one("SELECT (now() AT TIME ZONE 'UTC')::date - 3 AS day", {})
    assert day is not None
    fetch_all("SELECT sb_span_partition_add(%(day)s)", day)
    trace = trace_id()
    for n in range(3):
        spans = [SpanSpec(trace, name=f"more {n}", attributes={"switchboard.todo.id": todo_id})]
        ingest.ingest(
            personas.endpoint_a.id, request(spans).SerializeToString(), PROTOBUF, None, 1 << 20
        )
    # One span received three days ago (its day's partition), one on a day that has no
    # partition (the default one), the rest today.
    fetch_all(
        "UPDATE todo_spans SET received_at = %(day)s::timestamp AT TIME ZONE 'UTC'"
        " WHERE todo_id = %(id)s AND name = 'more 0'",
        {**day, "id": todo_id},
    )
    fetch_all(
        "UPDATE todo_spans SET received_at = now() - interval '400 days'"
        " WHERE todo_id = %(id)s AND name = 'more 1'",
        {"id": todo_id},
    )
    where = fetch_all(
        "SELECT DISTINCT tableoid::regclass::text AS part FROM todo_spans WHERE todo_id = %(id)s",
        {"id": todo_id},
    )
    assert len(where) == 3 and {"part": "todo_spans_default"} in where

    forget.forget(personas.alice.id, [todo_id])

    assert rows_of(todo_id)["todo_spans"] == []
    assert fetch_all("SELECT 1 FROM todo_spans WHERE todo_id = %(id)s", {"id": todo_id}) == []
    assert rows_of(todo_id)["todo_span_counts"] == []


# --- the Board and the command -------------------------------------------------------------------


@pytest.fixture
def alice(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.alice)
    return client


def test_the_trail_page_forgets_after_a_tick_and_shows_the_tombstone(
    personas: Personas, alice: Client
) -> None:
    todo_id = lived(personas)
    url = reverse("todo_action", args=[todo_id, "forget"])
    page = alice.get(reverse("todo_detail", args=[todo_id])).content.decode()
    assert "Forget the todo" in page and SECRET in page

    refused = alice.post(url)
    assert refused.status_code == 400 and "tick the box" in refused.content.decode()
    assert Todo.objects.get(id=todo_id).forgotten_at is None

    shown = alice.post(url, {"understood": "on"}, follow=True).content.decode()
    assert "Forgotten" in shown and "by alice" in shown
    # Its attempt still counts the span it stored; forgetting, not retention, took it.
    assert "removed by retention" not in shown
    assert SECRET not in shown and "Forget the todo" not in shown
    again = alice.post(url, {"understood": "on"})
    assert again.status_code == 409
    bob = Client()
    bob.force_login(personas.bob)
    assert bob.post(url, {"understood": "on"}).status_code == 404


def test_bulk_forget_counts_confirms_and_forgets_the_finished_todos_of_a_filter(
    personas: Personas, alice: Client
) -> None:
    ep = personas.endpoint_a.id
    finished = []
    for _ in range(2):
        todo = new_todo(ep)
        lifecycle.cancel(Scope.of_human(personas.alice.id), todo.id)
        finished.append(todo.id)
    open_ = new_todo(ep).id

    confirm = alice.get(reverse("bulk_forget")).content.decode()
    assert "2</span> finished todos" in confirm
    seen_at = confirm.split('name="seen_at" value="')[1].split('"')[0]
    done = alice.post(reverse("bulk_forget"), {"seen_at": seen_at, "counted": "2"}, follow=True)

    assert "Forgot 2 todos." in done.content.decode()
    assert set(Todo.objects.filter(forgotten_at__isnull=False).values_list("id", flat=True)) == set(
        finished
    )
    assert Todo.objects.get(id=open_).forgotten_at is None


def test_manage_py_forget_says_what_it_forgot_and_exits_1_for_the_rest(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    done = new_todo(ep).id
    lifecycle.cancel(Scope.of_human(personas.alice.id), done)
    pending = new_todo(ep).id
    out, err = io.StringIO(), io.StringIO()

    with pytest.raises(CommandError) as failed:
        call_command("forget", done, pending, "td_unknown", "--as", "alice", stdout=out, stderr=err)

    assert failed.value.returncode == 1
    assert out.getvalue() == f"Forgot {done}.\n"
    assert f"{pending}: not finished (cancel it first)" in err.getvalue()
    assert "td_unknown: not found" in err.getvalue()
    assert Todo.objects.get(id=done).forgotten_by == f"human:{personas.alice.id}"
    bob_err = io.StringIO()
    with pytest.raises(CommandError):
        call_command("forget", done, "--as", "bob", stderr=bob_err)
    assert f"{done}: not found" in bob_err.getvalue()


def test_a_forgotten_todos_pages_say_its_routing_was_erased_and_who_forgot_it(
    personas: Personas, alice: Client
) -> None:
    todo_id = lived(personas)
    forget.forget(personas.alice.id, [todo_id])
    event = Todo.objects.get(id=todo_id).event
    assert event is not None and event.routing_trace == []

    page = alice.get(reverse("todo_detail", args=[todo_id])).content.decode()
    delivery = alice.get(reverse("source_event", args=["gh", event.id])).content.decode()
    source = alice.get(reverse("source_detail", args=["gh"])).content.decode()

    for html in (page, delivery, source):
        assert "The routing trace was erased when its todo was forgotten." in html
        assert "No rule was tried." not in html
    forgot = re.search(r'<span class="actor human">alice</span> forgot it([^<]*)<', page)
    assert forgot and forgot.group(1) == ""  # no "completed → completed": nothing changed state
    assert "forget:" not in page
