"""The fleet on the endpoint pages (todos/fleet.py, todos/sql/fleet.sql): last seen, open
subscription streams, the todos an endpoint holds with their lease countdowns, failure rates;
all of it scoped to the owner. The live side (an MCP call moving last seen, streams on two
server processes) is in tests/mcp/test_fleet.py."""

from __future__ import annotations

import datetime as dt
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from django.template import Context, Template
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from mcp_server import presence
from switchboard.lib.sql import fetch_all
from switchboard.models import EndpointKey
from switchboard.scope import Scope
from switchboard.templatetags.board_tags import left
from tests.base import Personas
from tests.reach import OWNER, claimed, died_then_failed, expire_lease, new_todo
from todos import fleet, lifecycle
from todos.fleet import FailureRate

pytestmark = pytest.mark.django_db


def _age_attempts(todo_id: str, seconds: int) -> None:
    """Move a todo's ended attempts ``seconds`` into the past (PostgreSQL's clock, not Python's)."""
    rows = fetch_all(
        "UPDATE todo_attempts SET ended_at = ended_at - %(s)s * interval '1 second'"
        " WHERE todo_id = %(id)s AND ended_at IS NOT NULL RETURNING seq",
        {"id": todo_id, "s": seconds},
    )
    assert rows


def _fleet_of(personas: Personas) -> fleet.EndpointFleet:
    return fleet.fleet(Scope.of_human(personas.alice.id), [personas.endpoint_a.id])[
        personas.endpoint_a.id
    ]


# --- failure rates ------------------------------------------------------------------------------


def test_failure_rates_count_failed_and_died_attempts_of_those_that_ended(
    personas: Personas,
) -> None:
    a = personas.endpoint_a.id
    # In the last hour: one completed, one died then failed (two closed attempts: reaped,
    # failed), one released (ended, not a failure).
    done = claimed(a)
    lifecycle.complete(a, done.todo.id, owner=OWNER)
    died_then_failed(a)
    released = claimed(a)
    lifecycle.release(a, released.todo.id, owner=OWNER)
    # Earlier today: a completed one and a failed one.
    old_done = claimed(a)
    lifecycle.complete(a, old_done.todo.id, owner=OWNER)
    _age_attempts(old_done.todo.id, 3 * 3600)
    old_failed = claimed(a)
    lifecycle.fail(a, old_failed.todo.id, owner=OWNER, retryable=False)
    _age_attempts(old_failed.todo.id, 5 * 3600)
    # Two days ago: outside both windows.
    ancient = claimed(a)
    lifecycle.fail(a, ancient.todo.id, owner=OWNER, retryable=False)
    _age_attempts(ancient.todo.id, 2 * 86400)
    # Still open: never counted.
    claimed(a)
    # Bob's failures are his own.
    b = personas.endpoint_b.id
    bobs = claimed(b)
    lifecycle.fail(b, bobs.todo.id, owner=OWNER, retryable=False)

    figures = _fleet_of(personas)

    assert figures.hour == FailureRate(ended=4, failed=2)
    assert figures.day == FailureRate(ended=6, failed=3)
    assert figures.hour.percent == 50 and figures.day.percent == 50


def test_a_lapsed_lease_counts_as_died_once_reaped(personas: Personas) -> None:
    a = personas.endpoint_a.id
    held = claimed(a, max_attempts=1)
    expire_lease(held.todo.id)
    assert _fleet_of(personas).hour == FailureRate(ended=0, failed=0)  # lapsed, not yet reaped
    lifecycle.reap()

    assert _fleet_of(personas).hour == FailureRate(ended=1, failed=1)


def test_the_rate_is_none_when_nothing_ended() -> None:
    assert FailureRate(ended=0, failed=0).percent is None
    assert FailureRate(ended=3, failed=1).percent == 33


# --- claims -------------------------------------------------------------------------------------


def test_claims_are_the_todos_the_endpoint_holds_soonest_lease_first(
    personas: Personas,
) -> None:
    a = personas.endpoint_a.id
    long = claimed(a, title="long lease", lease_ttl_seconds=3600)
    short = claimed(a, title="short lease", lease_ttl_seconds=120)
    new_todo(a, title="pending")
    done = claimed(a, title="done")
    lifecycle.complete(a, done.todo.id, owner=OWNER)
    claimed(personas.endpoint_b.id, title="bob's")

    held = fleet.claims(Scope.of_human(personas.alice.id), a)

    assert [t.id for t in held] == [short.todo.id, long.todo.id]
    assert _fleet_of(personas).claims == 2
    assert fleet.claims(Scope.of_human(personas.bob.id), a) == []


def test_the_endpoint_page_lists_its_claims_with_lease_countdowns(
    alice_client: Client, personas: Personas
) -> None:
    a = personas.endpoint_a.id
    held = claimed(a, title="fix the build", lease_ttl_seconds=300)
    claimed(personas.endpoint_b.id, title="bob's secret task")

    body = alice_client.get(reverse("endpoint_detail", args=["agent-a"])).content.decode()

    claims = body[body.index('<table id="claims"') :]
    claims = claims[: claims.index("</table>")]
    assert "fix the build" in claims and held.todo.id in claims
    assert "bob&#x27;s secret task" not in body
    [seconds] = re.findall(r'data-lease-left="([0-9.]+)"', claims)
    assert 290 < float(seconds) <= 300
    assert re.search(r">4 min \d+ s left</time>", claims)


def test_the_endpoint_page_makes_a_fixed_number_of_queries(
    alice_client: Client,
    personas: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    a = personas.endpoint_a.id
    url = reverse("endpoint_detail", args=["agent-a"])
    # session, user, the endpoint, its keys, its fleet, its claims, its pushes, its OAuth
    # connections, the rail's count, the teams it could move into (10 in all)
    with django_assert_num_queries(10):
        alice_client.get(url)
    for n in range(5):
        claimed(a, title=f"task {n}")
    with django_assert_num_queries(10):
        body = alice_client.get(url).content.decode()
    assert body.count("data-lease-left=") == 5


# --- last seen ----------------------------------------------------------------------------------


def test_last_seen_is_the_newest_use_of_any_key_revoked_ones_too(
    alice_client: Client, personas: Personas
) -> None:
    assert _fleet_of(personas).last_seen_at is None
    old, new = (
        dt.datetime(2026, 11, 1, 10, 20, tzinfo=dt.UTC),
        dt.datetime(2026, 11, 2, 8, 5, tzinfo=dt.UTC),
    )
    key = EndpointKey.objects.get(endpoint=personas.endpoint_a)
    EndpointKey.objects.filter(pk=key.pk).update(last_used_at=old)
    EndpointKey.objects.create(
        endpoint=personas.endpoint_a,
        prefix="sbk_revoked",
        key_hash=b"x" * 32,
        last_used_at=new,
        revoked_at=timezone.now(),
    )

    assert _fleet_of(personas).last_seen_at == new
    body = alice_client.get(reverse("endpoint_list")).content.decode()
    assert "2026-11-02 08:05:00 UTC" in body


# --- open subscription streams ------------------------------------------------------------------


def test_open_streams_are_summed_over_processes_and_stale_rows_do_not_count(
    personas: Personas,
) -> None:
    a, b = personas.endpoint_a.id, personas.endpoint_b.id
    one, two, dead = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    presence.report(one, {a: 2, b: 1})
    presence.report(two, {a: 1})
    presence.report(dead, {a: 5})
    fetch_all(
        "UPDATE mcp_streams_open SET seen_at = now() - %(s)s * interval '1 second'"
        " WHERE process_id = %(p)s RETURNING 1",
        {"p": dead, "s": fleet.STREAMS_STALE_SECONDS + 1},
    )

    assert _fleet_of(personas).open_streams == 3

    presence.report(one, {b: 1})  # a's streams on process one closed
    assert _fleet_of(personas).open_streams == 1
    presence.report(two, {})
    assert _fleet_of(personas).open_streams == 0
    assert fleet.fleet(Scope.of_human(personas.bob.id), [b])[b].open_streams == 1


def test_a_report_deletes_the_rows_of_a_long_dead_process_only(personas: Personas) -> None:
    a = personas.endpoint_a.id
    live, dead = uuid.uuid4(), uuid.uuid4()
    presence.report(live, {a: 1})
    presence.report(dead, {a: 1})
    fetch_all(
        "UPDATE mcp_streams_open SET seen_at = now() - %(s)s * interval '1 second'"
        " WHERE process_id = %(p)s RETURNING 1",
        {"p": dead, "s": presence.PRUNE_SECONDS + 1},
    )

    presence.report(uuid.uuid4(), {})

    rows = fetch_all("SELECT process_id FROM mcp_streams_open WHERE endpoint_id = %(e)s", {"e": a})
    assert [row["process_id"] for row in rows] == [live]


# --- scope --------------------------------------------------------------------------------------


def test_bob_never_sees_alices_fleet(bob_client: Client, personas: Personas) -> None:
    a = personas.endpoint_a.id
    claimed(a, title="alice's claim")
    presence.report(uuid.uuid4(), {a: 1})

    assert fleet.fleet(Scope.of_human(personas.bob.id), [a]) == {}
    assert bob_client.get(reverse("endpoint_detail", args=["agent-a"])).status_code == 404
    body = bob_client.get(reverse("endpoint_list")).content.decode()
    assert "agent-a" not in body and "agent-b" in body


def test_the_list_shows_each_endpoints_fleet(alice_client: Client, personas: Personas) -> None:
    a = personas.endpoint_a.id
    held = claimed(a)
    claimed(a)
    lifecycle.fail(a, held.todo.id, owner=OWNER, retryable=False)
    presence.report(uuid.uuid4(), {a: 2})

    body = alice_client.get(reverse("endpoint_list")).content.decode()

    row = body[body.index('data-endpoint="agent-a"') :]
    row = row[: row.index("</tr>")]
    assert re.search(r'class="subscriptions">2<', row)
    assert re.search(r'class="claims">1<', row)
    assert "100%" in row and "of 1" in row


# --- the countdown's words ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (252.7, "4 min 12 s left"),
        (12.9, "12 s left"),
        (9.5, "9 s left"),
        (3900, "1 h 5 min left"),
        (0.4, "expired"),
        (-30, "expired"),
    ],
)
def test_countdown_words(seconds: float, words: str) -> None:
    assert left(seconds) == words


def test_the_lease_tag_renders_seconds_left_and_the_absolute_time_on_hover() -> None:
    moment = timezone.now() + dt.timedelta(seconds=90)
    html = Template("{% load board_tags %}{% lease moment %}").render(Context({"moment": moment}))

    assert re.fullmatch(
        r'<time datetime="[^"]+" title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"'
        r' data-lease-left="(8\d|90)\.\d">1 min (2\d|30) s left</time>',
        html,
    ), html
