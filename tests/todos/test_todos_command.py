"""``manage.py todos``: list (the Board's list, the same filters), show, retry and cancel, scoped
by ``--as``, a foreign id answering exactly as an unknown one, and exit codes that say what
happened (todos/management/operate.py)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from decimal import Decimal
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from activity.models import TodoActivity
from tests.base import Personas
from tests.reach import BOT, claimed, new_todo, set_created_at
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db

ROW_ID = re.compile(r'<tr id="row-(td_[a-z2-7]{20})"')


def todos(*args: str) -> str:
    out = io.StringIO()
    call_command("todos", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def refused(*args: str) -> CommandError:
    with pytest.raises(CommandError) as excinfo:
        todos(*args)
    return excinfo.value


def _board(client: Client, params: dict[str, str]) -> list[str]:
    response = client.get(reverse("todo_list"), params)
    assert response.status_code == 200
    return ROW_ID.findall(response.content.decode())


def _seed(personas: Personas) -> dict[str, str]:
    ep = personas.endpoint_a.id
    ids = {"pending": new_todo(ep, "work", title="a pending one").id}
    ids["running"] = claimed(ep, "work", owner=BOT, title="running").todo.id
    ids["failed"] = claimed(ep, "ci", owner=BOT, title="failed for good").todo.id
    lifecycle.fail(ep, ids["failed"], owner=BOT, retryable=False)
    ids["bob"] = new_todo(personas.endpoint_b.id, "work", title="bob's").id
    for age, todo_id in enumerate(ids.values()):
        set_created_at(todo_id, 60 * (10 - age))
    return ids


@pytest.mark.parametrize(
    "params",
    [{}, {"state": "pending"}, {"queue": "work"}, {"dead": "1"}, {"sort": "title"}],
    ids=["all", "state", "queue", "dead", "sort"],
)
def test_list_json_lists_what_the_board_lists(personas: Personas, params: dict[str, str]) -> None:
    _seed(personas)
    client = Client()
    client.force_login(personas.alice)
    args = ["list", "--json", "--as", "alice"]
    for name, value in params.items():
        args += ["--dead"] if name == "dead" else [f"--{name}", value]
    listed = json.loads(todos(*args))
    assert [t["id"] for t in listed["todos"]] == _board(client, params)
    assert listed["todos"], "each filter here matches something"
    assert {t["endpoint"] for t in listed["todos"]} == {"agent-a"}


def test_list_pages_with_the_cursor_and_needs_a_viewer(personas: Personas) -> None:
    ids = _seed(personas)
    first = json.loads(todos("list", "--json", "--as", "alice", "--limit", "2"))
    rest = json.loads(todos("list", "--json", "--as", "alice", "--after", first["next_cursor"]))
    got = [t["id"] for t in first["todos"] + rest["todos"]]
    assert got == [ids["failed"], ids["running"], ids["pending"]]
    assert rest["next_cursor"] is None
    # Without --as, an endpoint's own todos; without either, a named refusal.
    by_endpoint = json.loads(todos("list", "--json", "--endpoint", "agent-b"))
    assert [t["id"] for t in by_endpoint["todos"]] == [ids["bob"]]
    assert refused("list").returncode == 1
    assert refused("list", "--as", "nobody").returncode == 1
    assert refused("list", "--as", "alice", "--limit", "0").returncode == 1
    assert refused("list", "--as", "alice", "--search", "ab").returncode == 1
    text = todos("list", "--as", "alice", "--state", "failed")
    assert text.startswith(ids["failed"]) and "agent-a/ci" in text


def test_show_reads_one_todo_and_a_foreign_id_is_not_found(personas: Personas) -> None:
    ids = _seed(personas)
    shown = json.loads(todos("show", ids["running"], "--json", "--as", "alice"))
    assert shown["todo"]["id"] == ids["running"]
    assert shown["todo"]["endpoint"] == "agent-a"
    assert [a["outcome"] for a in shown["attempts"]] == [None]
    assert "state: claimed" in todos("show", ids["running"])
    foreign = refused("show", ids["bob"], "--as", "alice")
    unknown = refused("show", "td_aaaaaaaaaaaaaaaaaaaa", "--as", "alice")
    assert (foreign.returncode, unknown.returncode) == (3, 3)
    assert str(foreign).replace(ids["bob"], "ID") == str(unknown).replace(
        "td_aaaaaaaaaaaaaaaaaaaa", "ID"
    )


def test_show_gives_the_cost_and_who_held_each_attempt(personas: Personas) -> None:
    """As the trail does: the todo's cost and tokens, each attempt's holder (its lease's owner
    when the claim set no claimant label) and cost."""
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, "q", owner=BOT, max_cost_usd="0.5").todo.id
    Todo.objects.filter(id=todo_id).update(
        input_tokens=1200, output_tokens=300, cost_usd=Decimal("0.0225")
    )
    shown = todos("show", todo_id)
    assert "cost: $0.02 · 1,200 in / 300 out tokens (cap $0.50)" in shown
    assert f"#1 open by {BOT}" in shown
    as_json = json.loads(todos("show", todo_id, "--json"))
    assert as_json["todo"]["usage"]["cost_usd"] == 0.0225
    assert as_json["todo"]["max_cost_usd"] == "0.500000"
    assert as_json["attempts"][0]["owner"] == BOT


def test_retry_and_cancel_act_and_say_what_happened(personas: Personas) -> None:
    ids = _seed(personas)
    assert todos("retry", ids["failed"], "--as", "alice").startswith(f"Retried {ids['failed']}")
    assert Todo.objects.get(pk=ids["failed"]).state == "pending"
    assert refused("retry", ids["pending"], "--as", "alice").returncode == 4
    assert refused("retry", ids["bob"], "--as", "alice").returncode == 3
    assert Todo.objects.get(pk=ids["bob"]).state == "pending"

    out = todos("cancel", ids["running"], "--reason", "not needed")
    assert out.startswith(f"Canceled {ids['running']} (its holder is told")
    assert refused("cancel", ids["running"], "--reason", "again").returncode == 4
    assert refused("cancel", ids["bob"], "--reason", "x", "--as", "alice").returncode == 3
    assert refused("cancel", "td_aaaaaaaaaaaaaaaaaaaa", "--reason", "x").returncode == 3
    actors = dict(
        TodoActivity.objects.filter(todo_id__in=[ids["failed"], ids["running"]])
        .filter(kind="human_action")
        .values_list("todo_id", "actor_ref")
    )
    assert actors == {ids["failed"]: f"human:{personas.alice.id}", ids["running"]: "command:cancel"}


def test_retry_without_as_is_the_systems(personas: Personas) -> None:
    ids = _seed(personas)
    todos("retry", ids["failed"])
    row: Any = TodoActivity.objects.get(todo_id=ids["failed"], kind="human_action")
    assert row.actor_ref == "command:retry"


@pytest.mark.django_db(transaction=True)
def test_exit_codes_reach_the_shell(personas: Personas, daphne_env: dict[str, str]) -> None:
    """The codes are the process's exit status, not only the exception's field."""
    todo = new_todo(personas.endpoint_b.id, "work").id
    done = subprocess.run(
        [sys.executable, "manage.py", "todos", "show", todo, "--as", "alice"],
        env=daphne_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr.strip()) == (3, f"CommandError: {todo}: not found")


def test_list_json_reads_in_constant_queries(
    personas: Personas, django_assert_max_num_queries: Any
) -> None:
    """Every field of a row comes with the page: no deferred column is read per row."""
    for _ in range(5):
        claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-7")
    with django_assert_max_num_queries(2):
        listed = json.loads(todos("list", "--json", "--as", "alice"))
    assert len(listed["todos"]) == 5
