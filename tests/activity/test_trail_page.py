"""The trail page, /todos/{id}: the todo's whole story in one page, owner-scoped, in a fixed
number of queries."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from activity.trail import todo_trail
from switchboard.lib.errors import TodoNotFound
from switchboard.models import Setting
from switchboard.scope import Scope
from tests import reach
from tests.activity.helpers import a2a, agent_note, board, rung, swept_dead_letters, swept_retry
from tests.base import Personas
from tests.intake.conftest import Hook
from tests.reach import BOT
from todos import lifecycle

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"


# The Board's tests reach their states on queue "work", as agent BOT with a claimant.
def new_todo(endpoint_id: Any, queue: str = "work", **create: Any) -> Any:
    return reach.new_todo(endpoint_id, queue, **create)


def claimed(endpoint_id: Any, queue: str = "work", **create: Any) -> str:
    held = reach.claimed(endpoint_id, queue, owner=BOT, claimant="harness/run-1", **create)
    return held.todo.id


def died_then_failed(endpoint_id: Any) -> str:
    return reach.died_then_failed(endpoint_id, "work", owner=BOT).todo.id


def page(client: Client, todo_id: str) -> str:
    response = client.get(reverse("todo_detail", args=[todo_id]))
    assert response.status_code == 200
    return response.content.decode()


def main(body: str) -> str:
    """The page's content, without the shell (whose CSRF token differs on every render)."""
    return body.split('<main class="content">')[1]


def group(body: str, seq: int) -> str:
    """The attempt group's section."""
    match = re.search(rf'<section class="[^"]*" id="attempt-{seq}".*?</section>', body, re.S)
    assert match, f"no attempt-{seq} group"
    return match.group(0)


def entry(body: str, anchor: str) -> str:
    """One entry, from its opening tag to the next entry or group."""
    match = re.search(
        rf'<div class="trail-entry [^"]*" id="{anchor}">.*?(?=<div class="trail-entry|<section|'
        r'<div id="sb-trail-live)',
        body,
        re.S,
    )
    assert match, f"no entry {anchor}"
    return match.group(0)


# --- scope -------------------------------------------------------------------------------------


def test_bob_gets_the_same_404_for_alices_todo_as_for_an_unknown_one(
    bob_client: Client, personas: Personas
) -> None:
    todo_id = claimed(personas.endpoint_a.id)
    agent_note(personas.endpoint_a.id, todo_id, BOT, "alice's secret plan")

    foreign = bob_client.get(reverse("todo_detail", args=[todo_id]))
    unknown = bob_client.get(reverse("todo_detail", args=["td_aaaaaaaaaaaaaaaaaaaa"]))

    assert foreign.status_code == unknown.status_code == 404
    body = foreign.content.decode()
    assert "was not found" in body and "alice's secret plan" not in body
    assert main(body).replace(todo_id, "ID") == main(unknown.content.decode()).replace(
        "td_aaaaaaaaaaaaaaaaaaaa", "ID"
    )


def test_the_read_refuses_a_foreign_id_before_reading_its_activity(
    personas: Personas, django_assert_num_queries: Callable[..., Any]
) -> None:
    todo_id = claimed(personas.endpoint_a.id)

    # One query, the owner-scoped read of the todo; nothing of the trail after it.
    with django_assert_num_queries(1), pytest.raises(TodoNotFound):
        todo_trail(Scope.of_human(personas.bob.id), todo_id)
    with django_assert_num_queries(1), pytest.raises(TodoNotFound):
        todo_trail(personas.bob.id, todo_id)


# --- the story -------------------------------------------------------------------------------


def test_a_webhook_todo_shows_its_source_delivery_and_routing_trace(
    alice_client: Client, hook: Hook
) -> None:
    response = hook.post(delivery="d6c1e0a0-5f4b-11ef-8000-000000000001")
    (todo_id,) = response.json()["todo_ids"]

    body = page(alice_client, todo_id)

    event = entry(body, "event")
    assert "Delivered</strong> to source" in event and 'href="/sources/github"' in event
    assert "d6c1e0a0-5f4b-11ef-8000-000000000001" in event
    assert '<span class="badge verif-valid">valid</span>' in event
    # The routing trace in words: the rule that matched, each condition held.
    assert "CI failures" in event and "verdict-matched" in event
    assert "check_run.conclusion" in event and "✓ ok" in event
    assert f'created <a class="mono" href="/todos/{todo_id}">' in event
    # Headers and payload as delivered, collapsed.
    assert "<details><summary>Headers</summary>" in event and "x-github-event" in event
    assert "<details><summary>Payload as delivered</summary>" in event
    assert "test (3.12)" in event
    # Then its creation, from that delivery.
    assert body.index('id="event"') < body.index('id="created"')
    assert "from the delivery above" in entry(body, "created")


def test_a_todo_made_another_way_has_no_event_entry(
    alice_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, work_order="Make CI green.", payload={"n": 1})

    body = page(alice_client, todo.id)

    assert 'id="event"' not in body
    created = entry(body, "created")
    assert 'Created</strong> on <span class="mono">agent-a</span>' in created
    assert "Make CI green." in created and '<pre class="payload">' in created


def test_each_attempt_is_a_group_with_its_claim_notes_heartbeat_and_end(
    alice_client: Client, personas: Personas
) -> None:
    todo_id = died_then_failed(personas.endpoint_a.id)
    board(personas.alice.id, "retry", todo_id)
    lifecycle.claim(personas.endpoint_a.id, todo_id, owner=BOT, claimant="harness/run-3")
    agent_note(personas.endpoint_a.id, todo_id, BOT, "reran the suite: 3 failures left")
    agent_note(personas.endpoint_a.id, todo_id, BOT, "fixed two; the last is a flake")

    body = page(alice_client, todo_id)

    died, failed, running = group(body, 1), group(body, 2), group(body, 3)
    assert 'class="attempt died"' in died and "died: lease expired, reaped" in died
    assert 'class="attempt failed"' in failed and "failed: reported by its holder" in failed
    assert "the build is red" in failed and "harness/run-2" in failed
    assert "Claimed</strong> by endpoint agent-a" in running and "harness/run-3" in running
    assert "in progress" in running
    # Notes in order, inside their attempt, and the heartbeat as one summary line.
    first, second = running.index("reran the suite"), running.index("fixed two")
    assert running.index("Claimed</strong>") < first < second
    assert running.count("last heartbeat") == 1 and "noted" in running
    assert (
        body.index('id="attempt-1"') < body.index('id="attempt-2"') < body.index('id="attempt-3"')
    )
    assert "3 attempts in all" in body


def test_board_actions_and_rings_are_on_the_trail_with_the_humans_name(
    alice_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id)
    rung(todo.id, subscribers=2)
    board(personas.alice.id, "claim", todo.id)
    board(personas.alice.id, "fail", todo.id, "the vendor API is down")
    swept_retry(todo.id)

    body = page(alice_client, todo.id)

    ring = entry(body, "activity-1")
    assert "doorbell" in ring and "rang the doorbell" in ring and "(2 listening)" in ring
    claim = group(body, 1)
    # The operator's claim and the action rows name alice, not human:<id>.
    assert "operator alice" in claim and f"human:{personas.alice.id}" not in body
    assert '<span class="actor human">alice</span> claimed it' in claim
    assert '<span class="actor human">alice</span> failed it' in claim
    assert "the vendor API is down" in claim
    assert (
        '<span class="badge state-claimed">claimed</span> → '
        '<span class="badge state-failed">failed</span>' in claim
    )
    assert "requeued it: its retry was due" in body


def test_an_a2a_transition_is_on_the_trail(alice_client: Client, personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id)
    a2a(todo_id, BOT, "interrupt", "claimed", "input-required")

    body = page(alice_client, todo_id)

    assert "paused it for input" in group(body, 1)


def test_notes_of_a_pruned_attempt_show_under_its_number(
    alice_client: Client, personas: Personas
) -> None:
    Setting.objects.create(key="attempts_max_per_todo", value=1)
    todo_id = claimed(personas.endpoint_a.id, max_attempts=10)
    agent_note(personas.endpoint_a.id, todo_id, BOT, "note of the first attempt")
    lifecycle.release(personas.endpoint_a.id, todo_id, owner=BOT)
    lifecycle.claim(personas.endpoint_a.id, todo_id, owner=BOT)

    body = page(alice_client, todo_id)

    pruned = group(body, 1)
    assert "attempt 1 (pruned)" in pruned and "note of the first attempt" in pruned
    assert "1 oldest pruned from history" in body


def test_everything_agents_and_senders_wrote_is_inert_text(
    alice_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, title=XSS, payload={"x": XSS}, work_order=XSS)
    lifecycle.claim(personas.endpoint_a.id, todo.id, owner=XSS, claimant=XSS)
    agent_note(personas.endpoint_a.id, todo.id, XSS, XSS)
    lifecycle.fail(personas.endpoint_a.id, todo.id, owner=XSS, summary=XSS)

    body = page(alice_client, todo.id)

    assert XSS not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_an_end_links_its_artifact_only_over_https_and_escapes_it(
    alice_client: Client, personas: Personas
) -> None:
    linked = claimed(personas.endpoint_a.id)
    artifact = "https://example.com/pr/1?a=1&b=<x>"
    lifecycle.complete(
        personas.endpoint_a.id, linked, owner=BOT, summary="merged", artifact=artifact
    )
    plain = claimed(personas.endpoint_a.id)
    lifecycle.complete(personas.endpoint_a.id, plain, owner=BOT, artifact="s3://bucket/log")

    end = entry(page(alice_client, linked), "attempt-1-end")
    other = entry(page(alice_client, plain), "attempt-1-end")

    escaped = "https://example.com/pr/1?a=1&amp;b=&lt;x&gt;"
    assert (
        f'<a href="{escaped}" rel="noopener noreferrer nofollow" target="_blank">{escaped}</a>'
        in end
    )
    assert '<span class="badge">→ done</span>' in end and '<p class="summary">merged</p>' in end
    assert '<span class="mono">s3://bucket/log</span>' in other and "<a href" not in other


def test_the_page_ends_with_the_live_container_and_keeps_the_actions(
    alice_client: Client, personas: Personas
) -> None:
    todo_id = claimed(personas.endpoint_a.id)

    body = page(alice_client, todo_id)

    assert f'<div id="sb-trail-live-{todo_id}" class="trail-live"></div>' in body
    assert f'action="/todos/{todo_id}/complete"' in body
    # Plain forms on the page: an action reloads it; the drawer's htmx target is not here.
    assert "hx-post" not in body.split('id="trail"')[1]


# --- cost --------------------------------------------------------------------------------------


def _attempts(personas: Personas, n: int, notes_each: int) -> str:
    todo_id = claimed(personas.endpoint_a.id, max_attempts=n + 1)
    for i in range(n):
        for k in range(notes_each):
            agent_note(personas.endpoint_a.id, todo_id, BOT, f"attempt {i + 1}, note {k + 1}")
        board(personas.alice.id, "extend", todo_id)
        lifecycle.release(personas.endpoint_a.id, todo_id, owner=BOT)
        rung(todo_id)
        lifecycle.claim(personas.endpoint_a.id, todo_id, owner=BOT)
    return todo_id


def test_the_page_makes_the_same_queries_for_2_and_20_attempts(
    alice_client: Client,
    personas: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    few = _attempts(personas, 1, 1)
    many = _attempts(personas, 19, 5)

    # session, user, the todo with its endpoint, its attempts, its activity, every attempt's
    # spans, the rail's unread count; the event only for a webhook's todo. No read of names:
    # the notes are the todo's endpoint's, the actions the viewer's.
    for todo_id, groups in ((few, 2), (many, 20)):
        with django_assert_num_queries(7):
            body = page(alice_client, todo_id)
        assert len(re.findall(r'<section class="attempt', body)) == groups
    assert body.count("noted") == 19 * 5


def test_naming_other_humans_costs_one_query_for_the_whole_page(
    alice_client: Client,
    personas: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    todo_id = _attempts(personas, 2, 1)
    for _ in range(3):  # staff acting for alice, as the admin does
        lifecycle.operator_extend(personas.alice.id, todo_id, actor_id=personas.admin.id)
    board(personas.alice.id, "extend", todo_id)

    with django_assert_num_queries(8):  # the 7 above, and one read of the admin's name
        body = page(alice_client, todo_id)

    admin = personas.admin.username
    assert body.count(f'<span class="actor human">{admin}</span> extended the lease') == 3
    assert f"human:{personas.admin.id}" not in body


def test_a_webhook_todo_costs_one_query_more(
    alice_client: Client, hook: Hook, django_assert_num_queries: Callable[..., Any]
) -> None:
    (todo_id,) = hook.post().json()["todo_ids"]

    with django_assert_num_queries(7):
        page(alice_client, todo_id)


def test_the_sweeps_dead_letters_say_why_in_words(alice_client: Client, personas: Personas) -> None:
    late, unclaimed, capped = swept_dead_letters(personas.endpoint_a.id)

    for todo_id, why in (
        (late, "It missed its finish-by deadline."),
        (unclaimed, "Nobody claimed it before its start-by deadline."),
        (capped, "Its cost reached its cap of $0.01 ($0.02 spent)."),
    ):
        body = main(page(alice_client, todo_id))
        said = re.search(
            r'<span class="actor">sweeper</span> (.*?)</div>\s*<p class="reason">(.*?)</p>',
            body,
            re.S,
        )
        assert said, body
        assert said.group(1).startswith("dead-lettered it: ")
        assert said.group(2) == why
        assert "dead_letter" not in re.sub(r"<[^>]+>", "", body.split('id="sb-trail-actions')[0])
    # The attempt's end keeps what the sweep stored, the sums as money.
    end = group(page(alice_client, capped), 1)
    assert '<p class="summary">max_cost_usd $0.01 reached ($0.02 spent)</p>' in end
