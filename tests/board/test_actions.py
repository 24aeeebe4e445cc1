"""Operator actions from the drawer: each is one lifecycle call; refusals render inline."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tests.base import Personas
from tests.factories import EndpointFactory
from tests.reach import BOT, claimed, expire_lease, new_todo
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "http://testserver/?state=pending"}


def act(client: Client, todo_id: str, action: str, htmx: bool = True, **data: str) -> Any:
    url = reverse("todo_action", args=[todo_id, action])
    return client.post(url, data, **(HTMX if htmx else {}))


def state(todo_id: str) -> str:
    return Todo.objects.get(id=todo_id).state


def buttons(body: str) -> set[str]:
    return set(re.findall(r'action="/todos/td_[a-z2-7]+/(\w+)"', body))


def test_claim_then_complete_from_the_drawer(alice_client: Client, personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")

    claim = act(alice_client, todo.id, "claim")
    assert claim.status_code == 200 and state(todo.id) == "claimed"
    assert "alice on the Board" in claim.content.decode()
    done = act(alice_client, todo.id, "complete", summary="done by hand")

    assert done.status_code == 200
    assert state(todo.id) == "completed"
    assert "done by hand" in done.content.decode()


def test_the_answer_is_the_drawer_and_the_row_out_of_band(
    alice_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")

    body = act(alice_client, todo.id, "claim").content.decode()

    assert body.startswith('<div class="drawer-body">') and "<html" not in body
    assert f'<template><tr id="row-{todo.id}" class="row" data-created=' in body
    assert 'hx-swap-oob="true">' in body.split("<template>")[1]
    assert 'class="badge state-claimed"' in body.split("<template>")[1]


def test_from_the_todo_page_the_answer_has_no_row(alice_client: Client, personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")
    url = reverse("todo_action", args=[todo.id, "claim"])
    page = f"http://testserver{reverse('todo_detail', args=[todo.id])}"

    response = alice_client.post(url, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=page)

    assert response.status_code == 200 and state(todo.id) == "claimed"
    assert "hx-swap-oob" not in response.content.decode()


def test_fail_retryable_schedules_a_retry_and_unchecked_dead_letters(
    alice_client: Client, personas: Personas
) -> None:
    retrying = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    dead = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id

    act(alice_client, retrying, "fail", summary="flaky", retryable="on")
    act(alice_client, dead, "fail", summary="hopeless")

    assert Todo.objects.get(id=retrying).next_retry_at is not None
    assert Todo.objects.get(id=dead).dead_letter


def test_release_extend_cancel_and_retry(alice_client: Client, personas: Personas) -> None:
    released = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    extended = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    before = Todo.objects.get(id=extended).lease_expires_at
    canceled = new_todo(personas.endpoint_a.id, "work").id

    assert act(alice_client, released, "release", summary="back you go").status_code == 200
    assert act(alice_client, extended, "extend", lease_ttl_seconds="3600").status_code == 200
    assert act(alice_client, canceled, "cancel", reason="not needed").status_code == 200

    assert state(released) == "pending"
    lease = Todo.objects.get(id=extended).lease_expires_at
    assert before is not None and lease is not None and lease > before
    assert state(canceled) == "canceled"
    assert act(alice_client, canceled, "retry").status_code == 200
    assert state(canceled) == "pending"


def test_a_dead_lettered_todo_is_retried_back_to_pending(
    alice_client: Client, personas: Personas
) -> None:
    todo_id = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    lifecycle.fail(personas.endpoint_a.id, todo_id, owner=BOT, retryable=False)
    assert "retry" in buttons(
        alice_client.get(reverse("todo_detail", args=[todo_id])).content.decode()
    )

    response = act(alice_client, todo_id, "retry")

    assert response.status_code == 200 and state(todo_id) == "pending"
    assert "Sent back to pending" in response.content.decode()


def test_the_drawer_offers_only_what_the_state_allows(
    alice_client: Client, personas: Personas
) -> None:
    pending = new_todo(personas.endpoint_a.id, "work").id
    running = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    lapsed = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    expire_lease(lapsed)
    done = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    lifecycle.complete(personas.endpoint_a.id, done, owner=BOT)

    def offered(todo_id: str) -> set[str]:
        return buttons(alice_client.get(reverse("todo_detail", args=[todo_id])).content.decode())

    assert offered(pending) == {"claim", "cancel"}
    assert offered(running) == {"complete", "fail", "release", "extend", "cancel"}
    assert offered(lapsed) == {"claim", "complete", "fail", "release", "extend", "cancel"}
    assert offered(done) == {"forget"}  # a finished todo can be forgotten (activity/forget.py)


def test_a_revoked_endpoints_dead_letter_offers_no_retry(
    alice_client: Client, personas: Personas
) -> None:
    doomed = EndpointFactory(owner=personas.alice, slug="doomed")
    todo_id = new_todo(doomed.id, "work").id
    lifecycle.revoke_endpoint(personas.alice.id, doomed.id)

    body = alice_client.get(reverse("todo_detail", args=[todo_id])).content.decode()

    # retry.sql refuses a revoked endpoint's todos, so the button would only answer a conflict.
    # Forgetting it stays possible: it is finished (activity/forget.py).
    assert "dead letter" in body and buttons(body) == {"forget"}
    assert act(alice_client, todo_id, "retry").status_code == 409


def test_a_conflict_renders_inline_in_the_drawer_with_409(
    alice_client: Client, personas: Personas
) -> None:
    # An agent holds a live lease.
    todo_id = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id

    response = act(alice_client, todo_id, "claim")

    body = response.content.decode()
    assert response.status_code == 409
    assert body.startswith('<div class="drawer-body">')
    assert 'class="error" role="alert"' in body and "Could not claim" in body
    assert "Traceback" not in body and "<html" not in body
    assert state(todo_id) == "claimed"


def test_a_stale_button_on_a_finished_todo_is_a_conflict_not_an_error_page(
    alice_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")

    response = act(alice_client, todo.id, "complete", summary="too early")

    assert response.status_code == 409 and "Could not complete" in response.content.decode()
    assert state(todo.id) == "pending"


def test_without_javascript_an_action_redirects_and_a_conflict_is_a_full_page(
    alice_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")

    ok = act(alice_client, todo.id, "claim", htmx=False)
    refused = act(alice_client, todo.id, "complete", htmx=False)  # fine: alice holds it now
    again = act(alice_client, todo.id, "release", htmx=False)

    assert ok.status_code == 302 and ok["Location"] == reverse("todo_detail", args=[todo.id])
    assert refused.status_code == 302 and state(todo.id) == "completed"
    assert again.status_code == 409
    body = again.content.decode()
    assert "<html" in body and "Could not release" in body and 'id="trail"' in body


def test_a_malformed_lease_length_is_shown_inline(alice_client: Client, personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id

    bad = act(alice_client, todo_id, "extend", lease_ttl_seconds="soon")
    out_of_range = act(alice_client, todo_id, "extend", lease_ttl_seconds="5")
    other_digits = act(alice_client, todo_id, "extend", lease_ttl_seconds="\u0661\u0662\u0660")

    assert bad.status_code == 400 and "lease_ttl_seconds" in bad.content.decode()
    assert other_digits.status_code == 400 and "whole number" in other_digits.content.decode()
    assert out_of_range.status_code == 400 and "between 10 and" in out_of_range.content.decode()


def test_an_extend_says_where_the_lease_now_ends_and_when_its_run_deadline_stops_it(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    free = claimed(ep, "work", owner=BOT).todo.id
    timed = claimed(ep, "timed", owner=BOT, run_timeout_seconds=30).todo.id

    extended = act(alice_client, free, "extend", htmx=False, lease_ttl_seconds="3600")
    follow = alice_client.get(extended["Location"]).content.decode()
    assert "Lease extended to " in follow and " UTC." in follow

    capped = act(alice_client, timed, "extend", htmx=False, lease_ttl_seconds="3600")
    page = alice_client.get(capped["Location"]).content.decode()
    assert "its run&#x27;s deadline (run timeout or finish_by)" in page
    assert "Lease extended" not in page


def test_actions_need_post_and_csrf(personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")
    client = Client(enforce_csrf_checks=True)
    client.force_login(personas.alice)
    url = reverse("todo_action", args=[todo.id, "claim"])

    assert client.get(url).status_code == 405
    assert client.post(url).status_code == 403
    assert state(todo.id) == "pending"


def test_an_unknown_action_is_not_found(alice_client: Client, personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")

    assert act(alice_client, todo.id, "explode").status_code == 404


def test_a_release_on_the_last_attempt_says_it_dead_lettered(
    alice_client: Client, personas: Personas
) -> None:
    last = claimed(personas.endpoint_a.id, "work", owner=BOT, max_attempts=1).todo.id
    spare = claimed(personas.endpoint_a.id, "work", owner=BOT, max_attempts=2).todo.id

    dead = act(alice_client, last, "release").content.decode()
    requeued = act(alice_client, spare, "release").content.decode()

    assert (state(last), state(spare)) == ("failed", "pending")
    assert "dead-lettered" in dead and "Released back to its queue." not in dead
    assert "Released back to its queue." in requeued


def test_a_human_answers_an_input_required_todo(alice_client: Client, personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, "work", owner=BOT).todo.id
    lifecycle.interrupt(
        ep, todo_id, owner=BOT, state="input-required", input_request={"question": "Which one?"}
    )
    page = alice_client.get(reverse("todo_detail", args=[todo_id])).content.decode()
    assert "answer" in buttons(page) and "The holder asks: Which one?" in page

    assert act(alice_client, todo_id, "answer", answer="").status_code == 400
    assert state(todo_id) == "input-required"
    assert act(alice_client, todo_id, "answer", answer="The blue one").status_code == 200
    todo = Todo.objects.get(id=todo_id)
    assert todo.state == "claimed" and todo.owner == BOT
    assert todo.input_request == {
        "question": "Which one?",
        "response": {"text": "The blue one", "from": f"human:{personas.alice.id}"},
    }
    # Answered once: the form is gone and a second answer is a conflict.
    assert "answer" not in buttons(
        alice_client.get(reverse("todo_detail", args=[todo_id])).content.decode()
    )
    assert act(alice_client, todo_id, "answer", answer="again").status_code == 409


def test_bob_cannot_answer_alices_todo(bob_client: Client, personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep, "work", owner=BOT).todo.id
    lifecycle.interrupt(ep, todo_id, owner=BOT, state="input-required", input_request=None)
    assert act(bob_client, todo_id, "answer", answer="mine now").status_code == 404
    assert state(todo_id) == "input-required"
