"""The Board's Overview page (todos/overview_views.py): the numbers of the rollups in a table,
the plots as inline SVG, the poll's partial, bad filters refused, a fixed number of queries,
reads of the rollups that never touch todos or attempts (their plans), the live depth's bounded
read, and the cost per queue with its plot."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from switchboard.lib.sql import fetch_all
from switchboard.scope import Scope
from tests.base import Personas
from tests.plans import plan_nodes
from tests.reach import claimed, new_todo
from todos import budgets, lifecycle, overview

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_rollups() -> None:
    """The rollup tables have no model: Django's flush leaves other tests' rows in them."""
    for table in ("overview_minutes", "overview_hours", "overview_marks"):
        fetch_all(f"DELETE FROM {table}", {})


@pytest.fixture
def busy(personas: Personas) -> Personas:
    """Alice: two pending todos, one claimed, one completed and one failed for good on queue
    ``build``; bob: one pending todo on ``secret-queue``. Rolled up."""
    ep = personas.endpoint_a.id
    new_todo(ep, "build")
    new_todo(ep, "build")
    claimed(ep, "build")
    c = claimed(ep, "build")
    lifecycle.complete(ep, c.todo.id, owner="worker-1", summary="done")
    c = claimed(ep, "build")
    lifecycle.fail(ep, c.todo.id, owner="worker-1", summary="red", retryable=False)
    new_todo(personas.endpoint_b.id, "secret-queue")
    overview.roll_up()
    return personas


def cell(body: str, queue: str, key: str) -> str:
    row = re.search(rf'<tr class="row[^"]*" data-queue="{re.escape(queue)}">(.*?)</tr>', body, re.S)
    assert row, f"no row for {queue}"
    found = re.search(rf'<(td|span) data-k="{key}"[^>]*>(.*?)</\1>', row.group(1), re.S)
    assert found, f"no {key} cell"
    return re.sub(r"<[^>]+>", "", found.group(2)).strip()


def test_the_rail_has_the_overview_tab_beside_todos(alice_client: Client, busy: Personas) -> None:
    body = alice_client.get("/overview/").content.decode()

    rail = body[body.index('<nav class="rail"') : body.index("</nav>")]
    assert rail.index(">Todos<") < rail.index(">Overview<") < rail.index(">Activity")
    assert re.search(r'href="/overview/" aria-current="page">Overview<', rail)


def test_the_table_shows_the_rollups_numbers(alice_client: Client, busy: Personas) -> None:
    response = alice_client.get("/overview/")

    body = response.content.decode()
    assert response.status_code == 200
    assert cell(body, "agent-a/build", "pending") == "2"
    assert cell(body, "agent-a/build", "in_flight") == "1"
    assert cell(body, "agent-a/build", "dead") == "1"
    assert cell(body, "agent-a/build", "retry_due") == "0"
    # One completion and one failure in the last hour: 1/60 a minute each.
    assert cell(body, "agent-a/build", "completed_hour") == "0.02"
    assert cell(body, "agent-a/build", "failed_hour") == "0.02"
    assert "&lt; 0.1 s" in cell(body, "agent-a/build", "run_hour")


def test_bob_sees_none_of_alices_queues(client: Client, busy: Personas) -> None:
    client.force_login(busy.bob)
    body = client.get("/overview/").content.decode()

    assert "secret-queue" in body
    assert "agent-a" not in body and "build" not in body
    # Naming alice's queue shows bob nothing of it.
    named = client.get("/overview/?endpoint=agent-a&queue=build").content.decode()
    assert "<rect" not in named


def test_the_plots_are_inline_svg_with_their_data(alice_client: Client, busy: Personas) -> None:
    body = alice_client.get("/overview/").content.decode()

    for key in ("throughput-hour", "depth-hour", "throughput-day", "depth-day"):
        svg = re.search(rf'<svg class="plot"[^>]*data-chart="{key}".*?</svg>', body, re.S)
        assert svg, key
        assert f'aria-labelledby="{key}-title {key}-desc"' in svg.group(0)
        assert 'role="img"' in svg.group(0)
    hour = re.search(r'data-chart="throughput-hour".*?</svg>', body, re.S)
    assert hour and hour.group(0).count("<rect") == 2  # this minute: completed, failed
    depth = re.search(r'data-chart="depth-hour".*?</svg>', body, re.S)
    assert depth and re.search(r'<path class="line-pending" d="M[\d.]+ [\d.]+', depth.group(0))
    assert "<script" not in body[body.index("<h1>Overview") :]


def test_a_queue_named_focuses_the_plots(alice_client: Client, busy: Personas) -> None:
    new_todo(busy.endpoint_a.id, "other")
    overview.roll_up()

    body = alice_client.get("/overview/?endpoint=agent-a&queue=other").content.decode()

    assert "Plots: agent-a / other" in body
    assert 'class="row selected" data-queue="agent-a/other"' in body
    assert "<rect" not in body  # nothing ended on "other"


def test_the_poll_gets_the_body_partial(
    alice_client: Client, busy: Personas, htmx_headers: dict[str, str]
) -> None:
    body = alice_client.get("/overview/", **htmx_headers).content.decode()  # type: ignore[arg-type]

    assert body.startswith('<div id="overview-body" hx-get="/overview/"')
    assert 'hx-trigger="every 15s"' in body
    assert "<nav" not in body


@pytest.mark.parametrize(
    "query", ["?endpoint=agent-a", "?queue=build", "?endpoint=a%00b&queue=x", "?queue=%ED%A0%80"]
)
def test_a_bad_filter_is_refused_with_a_message(
    alice_client: Client, busy: Personas, query: str
) -> None:
    response = alice_client.get(f"/overview/{query}")

    assert response.status_code == 400
    assert "Choose a queue from the table" in response.content.decode()


def test_the_page_takes_a_fixed_number_of_queries(
    alice_client: Client, busy: Personas, django_assert_num_queries: Callable[..., Any]
) -> None:
    alice_client.get("/overview/")
    # Session, user, the rail's unread count, the three reads of the rollups, the live depth
    # and the cost.
    with django_assert_num_queries(8):
        alice_client.get("/overview/")
    for n in range(10):
        new_todo(busy.endpoint_a.id, f"queue-{n}")
    overview.roll_up()
    with django_assert_num_queries(8):
        alice_client.get("/overview/")


def test_the_reads_never_touch_todos_or_attempts_but_the_bounded_live_one(
    busy: Personas,
) -> None:
    scope = Scope.of_human(busy.alice.id)
    with CaptureQueriesContext(connection) as captured:
        overview.overview(scope)
    assert len(captured.captured_queries) == 5
    rollups, live, cost = captured.captured_queries[:3], *captured.captured_queries[3:]
    for query in rollups:
        relations = _relations(query["sql"])
        assert relations & {"todos", "todo_attempts"} == set(), query["sql"][:80]
        assert relations & {"overview_minutes", "overview_hours"}
    assert _relations(cost["sql"]) & {"todos", "todo_attempts"} == set()
    # The live depth reads todos per endpoint through an index, stopped at the cap.
    with connection.cursor() as cur:
        cur.execute(f"EXPLAIN (FORMAT JSON) {live['sql']}")
        (plan,) = cur.fetchone()
    nodes = plan_nodes(plan[0]["Plan"])
    assert any(n.get("Node Type") == "Limit" for n in nodes)
    assert "todo_attempts" not in {n.get("Relation Name") for n in nodes}


def _relations(sql: str) -> set[str | None]:
    with connection.cursor() as cur:
        cur.execute(f"EXPLAIN (FORMAT JSON) {sql}")
        (plan,) = cur.fetchone()
    return {n.get("Relation Name") for n in plan_nodes(plan[0]["Plan"])}


def test_a_new_queue_shows_its_live_depth_before_any_sweep(
    alice_client: Client, busy: Personas
) -> None:
    new_todo(busy.endpoint_a.id, "brand-new")
    new_todo(busy.endpoint_a.id, "brand-new")
    claimed(busy.endpoint_a.id, "brand-new")
    body = alice_client.get("/overview/").content.decode()
    assert cell(body, "agent-a/brand-new", "pending") == "2"
    assert cell(body, "agent-a/brand-new", "in_flight") == "1"


def test_the_cost_per_queue_and_its_plot(alice_client: Client, busy: Personas) -> None:
    fetch_all(
        "INSERT INTO usage_hours (endpoint_id, queue, hour, input_tokens, output_tokens,"
        " cost_usd, unpriced_tokens) VALUES (%(e)s, 'build', date_trunc('hour', now()), 1000,"
        " 200, 1.2345, 0), (%(e)s, 'cheap', date_trunc('hour', now()), 10, 5, 0, 15)",
        {"e": busy.endpoint_a.id},
    )
    body = alice_client.get("/overview/").content.decode()
    assert cell(body, "agent-a/build", "cost_today") == "$1.23"
    assert cell(body, "agent-a/cheap", "cost_today") == "unpriced"
    assert "Cost, last day" in body and "$1.23 in all" in body
    assert "124 cents" in body  # 1.2345 USD, a started cent counted


def _first_cell(body: str, queue: str) -> str | None:
    row = re.search(rf'<tr class="row[^"]*" data-queue="{re.escape(queue)}">(.*?)</tr>', body, re.S)
    if row is None:
        return None
    first = re.search(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)
    assert first
    return " ".join(re.sub(r"<[^>]+>", " ", first.group(1)).split())


def test_a_paused_queue_says_so_and_why_on_its_row_in_the_same_reads(
    alice_client: Client, busy: Personas, django_assert_num_queries: Callable[..., Any]
) -> None:
    ep = busy.endpoint_a.id
    lifecycle.pause_queue(ep, "build", human_id=busy.alice.id)
    lifecycle.pause_queue(ep, "quiet", human_id=None)  # nothing on it: the pause alone shows it
    new_todo(ep, "spendy")
    lifecycle.set_queue_limits(ep, "spendy", human_id=None, daily_budget_usd="0.10")
    lifecycle.pause_for_budget(
        [(ep, "spendy")], reason="queue_budget", day_start=budgets.day_start(timezone.now())
    )
    lifecycle.pause_queue(busy.endpoint_b.id, "secret-queue", human_id=busy.bob.id)
    new_todo(ep, "open")

    with django_assert_num_queries(8):
        body = alice_client.get("/overview/").content.decode()

    assert _first_cell(body, "agent-a/build") == "agent-a / build paused by alice"
    assert _first_cell(body, "agent-a/quiet") == "agent-a / quiet paused by manage.py queue"
    assert _first_cell(body, "agent-a/spendy") == (
        "agent-a / spendy paused daily budget spent, until 00:00 UTC"
    )
    assert 'title="paused until 00:00 UTC: its daily budget is spent"' in body
    assert _first_cell(body, "agent-a/open") == "agent-a / open"
    assert cell(body, "agent-a/build", "pending") == "2"
    assert _first_cell(body, "agent-b/secret-queue") is None
