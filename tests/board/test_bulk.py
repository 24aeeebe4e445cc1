"""The Board's bulk actions on the list's filter and its queue pause buttons: a confirm page
with the count, a POST that acts and redirects (PRG) with how many it changed."""

from __future__ import annotations

import re
from uuid import UUID

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from switchboard.lib.sql import fetch_all
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo
from tests.rows import todo_row
from todos import budgets, lifecycle
from todos.models import QueuePause

pytestmark = pytest.mark.django_db


def _dead(ep: UUID, queue: str = "triage") -> str:
    todo_id = claimed(ep, queue).todo.id
    lifecycle.fail(ep, todo_id, owner=OWNER, retryable=False)
    return todo_id


def _confirm(client: Client, action: str, query: str) -> tuple[str, dict[str, str]]:
    """GET the confirm page; its text and the hidden fields of its form."""
    response = client.get(reverse("bulk_action", args=[action]) + query)
    assert response.status_code == 200
    html = response.content.decode()
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', html))
    return html, fields


def test_bulk_retry_shows_the_count_then_retries_and_redirects(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    dead = [_dead(ep) for _ in range(2)]
    other = _dead(ep, "build")

    html, fields = _confirm(alice_client, "retry", "?queue=triage&dead=1")
    assert re.search(r"<span data-count>2</span> dead letters", html)
    response = alice_client.post(
        reverse("bulk_action", args=["retry"]) + "?queue=triage&dead=1", fields
    )

    assert response.status_code == 302
    assert response["Location"] == reverse("todo_list") + "?queue=triage&dead=1"
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["Retried 2 todos."]
    assert [todo_row(t)["state"] for t in dead] == ["pending", "pending"]
    assert todo_row(other)["state"] == "failed"
    # Each todo's trail says it was one of a bulk action's, not picked out.
    trail = alice_client.get(reverse("todo_detail", args=[dead[0]])).content.decode()
    assert "retried it, in a bulk action" in trail


def test_the_count_is_said_in_its_number(alice_client: Client, personas: Personas) -> None:
    ep = personas.endpoint_a.id
    _dead(ep)
    new_todo(ep, "build")

    retry, _ = _confirm(alice_client, "retry", "?queue=triage")
    cancel, _ = _confirm(alice_client, "cancel", "?queue=build")

    assert "<span data-count>1</span> dead letter</strong>" in retry
    assert "<span data-count>1</span> unfinished todo</strong>" in cancel
    assert "<title>Retry dead letters · Switchboard</title>" in retry


def test_bulk_cancel_says_when_some_counted_had_changed(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    new_todo(ep, "triage")
    gone = new_todo(ep, "triage").id
    _, fields = _confirm(alice_client, "cancel", "?queue=triage")
    lifecycle.operator_complete(
        personas.alice.id, lifecycle.operator_claim(personas.alice.id, gone).todo.id
    )

    response = alice_client.post(
        reverse("bulk_action", args=["cancel"]) + "?queue=triage", {**fields, "reason": "stop"}
    )

    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert messages == ["Canceled 1 todo. 1 of those counted had changed."]


def test_the_confirm_page_says_when_nothing_matches(alice_client: Client) -> None:
    html, fields = _confirm(alice_client, "retry", "?queue=empty")

    assert "nothing to retry" in html
    assert "seen_at" not in fields


def test_a_bulk_post_without_the_counts_time_changes_nothing(
    alice_client: Client, personas: Personas
) -> None:
    todo_id = _dead(personas.endpoint_a.id)

    response = alice_client.post(reverse("bulk_action", args=["retry"]), {"seen_at": "yesterday"})

    assert response.status_code == 400
    assert "Nothing changed: seen_at" in response.content.decode()
    assert todo_row(todo_id)["state"] == "failed"


def test_bulk_actions_reach_only_the_humans_own_todos(
    bob_client: Client, personas: Personas
) -> None:
    alices = _dead(personas.endpoint_a.id)

    html, _ = _confirm(bob_client, "retry", "?endpoint=agent-a")
    bob_client.post(
        reverse("bulk_action", args=["retry"]) + "?endpoint=agent-a",
        {"seen_at": "2999-01-01T00:00:00+00:00"},
    )

    assert "nothing to retry" in html
    assert todo_row(alices)["state"] == "failed"


def test_an_unknown_bulk_action_is_not_found(alice_client: Client) -> None:
    assert alice_client.get(reverse("bulk_action", args=["delete"])).status_code == 404


# --- queue pause ------------------------------------------------------------------------------


def test_pause_confirm_then_pause_then_the_list_shows_it(
    alice_client: Client, personas: Personas
) -> None:
    new_todo(personas.endpoint_a.id, "triage")
    query = "?endpoint=agent-a&queue=triage"
    listed = alice_client.get(reverse("todo_list") + query).content.decode()
    assert "Pause queue triage" in listed

    confirm = alice_client.get(reverse("queue_action", args=["pause"]) + query)
    assert confirm.status_code == 200
    assert "<strong>1</strong> claimable now" in confirm.content.decode()
    response = alice_client.post(reverse("queue_action", args=["pause"]) + query)

    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == ["Paused triage on agent-a."]
    assert QueuePause.objects.filter(resumed_at__isnull=True).count() == 1
    listed = alice_client.get(reverse("todo_list")).content.decode()
    assert 'aria-label="Paused queues"' in listed
    assert "agent-a · triage" in listed
    filtered = alice_client.get(reverse("todo_list") + query).content.decode()
    assert "Resume queue triage" in filtered

    alice_client.post(reverse("queue_action", args=["resume"]) + query)
    assert not QueuePause.objects.filter(resumed_at__isnull=True).exists()


def test_a_human_cannot_pause_another_humans_queue(bob_client: Client, personas: Personas) -> None:
    response = bob_client.post(
        reverse("queue_action", args=["pause"]) + "?endpoint=agent-a&queue=triage"
    )

    assert response.status_code == 400
    assert not QueuePause.objects.exists()


@pytest.mark.parametrize("query", ["", "?endpoint=agent-a", "?endpoint=agent-a&queue=a%00b"])
def test_a_pause_without_a_queue_is_refused(alice_client: Client, query: str) -> None:
    response = alice_client.post(reverse("queue_action", args=["pause"]) + query)

    assert response.status_code == 400
    assert not QueuePause.objects.exists()


def _budget_paused(endpoint: UUID, queue: str = "spendy") -> None:
    """``queue`` spent $0.144 today against a $0.10 daily budget, and the sweeper paused it."""
    lifecycle.set_queue_limits(endpoint, queue, human_id=None, daily_budget_usd="0.10")
    fetch_all(
        "INSERT INTO usage_hours (endpoint_id, queue, hour, cost_usd)"
        " VALUES (%(e)s, %(q)s, date_trunc('hour', now()), 0.144)",
        {"e": endpoint, "q": queue},
    )
    assert lifecycle.pause_for_budget(
        [(endpoint, queue)], reason="queue_budget", day_start=budgets.day_start(timezone.now())
    )


def test_the_list_says_who_paused_each_queue_or_which_budget_and_until_when(
    alice_client: Client, personas: Personas
) -> None:
    alice_client.post(reverse("queue_action", args=["pause"]) + "?endpoint=agent-a&queue=triage")
    lifecycle.pause_queue(personas.endpoint_a.id, "nightly", human_id=None)
    _budget_paused(personas.endpoint_a.id)

    listed = alice_client.get(reverse("todo_list")).content.decode()

    why = dict(
        re.findall(
            r"agent-a · (\w+)</span> <span class=\"muted small\" data-pause-why>([^<]*)<", listed
        )
    )
    assert why == {
        "nightly": "paused by manage.py queue",
        "spendy": "paused until 00:00 UTC: its daily budget is spent ($0.14 of $0.10)",
        "triage": "paused by alice",
    }


def test_resuming_a_budgets_pause_warns_that_it_lifts_the_budget_for_the_day(
    alice_client: Client, personas: Personas
) -> None:
    _budget_paused(personas.endpoint_a.id)
    lifecycle.pause_queue(personas.endpoint_a.id, "triage", human_id=personas.alice.id)

    budget = alice_client.get(
        reverse("queue_action", args=["resume"]) + "?endpoint=agent-a&queue=spendy"
    ).content.decode()
    operator = alice_client.get(
        reverse("queue_action", args=["resume"]) + "?endpoint=agent-a&queue=triage"
    ).content.decode()

    assert "It is paused until 00:00 UTC: its daily budget is spent ($0.14 of $0.10)." in budget
    assert "overrides the budget for the rest of the UTC day" in budget
    assert "until 00:00 UTC however much more they spend" in budget
    assert "It is paused by alice." in operator
    assert "overrides the budget" not in operator
