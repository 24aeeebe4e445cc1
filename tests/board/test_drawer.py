"""The drawer: a todo's details and its attempts, died and failed told apart, all escaped."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from attempts.models import TodoAttempt
from switchboard.models import Setting
from tests.base import Personas
from tests.reach import BOT, claimed, died_then_failed, new_todo
from todos import lifecycle

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"


def attempt_blocks(body: str) -> dict[int, str]:
    """Each attempt's <li>, by seq."""
    found = re.findall(r'<li class="attempt[^"]*" id="attempt-(\d+)">(.*?)</li>', body, re.S)
    return {int(seq): block for seq, block in found}


def drawer(client: Client, todo_id: str) -> str:
    """The drawer as the list loads it (htmx); without htmx the URL is the trail page."""
    return client.get(
        reverse("todo_detail", args=[todo_id]), HTTP_HX_REQUEST="true"
    ).content.decode()


def test_htmx_gets_the_drawer_fragment_and_a_browser_the_trail_page(
    alice_client: Client, personas: Personas, htmx_headers: dict[str, str]
) -> None:
    todo = new_todo(
        personas.endpoint_a.id, "work", title="Fix the build", work_order="Make CI green."
    )
    url = reverse("todo_detail", args=[todo.id])

    fragment = alice_client.get(url, **htmx_headers).content.decode()
    page = alice_client.get(url).content.decode()

    assert fragment.startswith('<div class="drawer-body">') and "<html" not in fragment
    assert "Nobody has claimed it yet." in fragment
    assert "<html" in page and 'id="trail"' in page and 'id="drawer"' not in page
    for body in (fragment, page):
        assert "Fix the build" in body and "Make CI green." in body and todo.id in body


def test_the_payload_is_formatted_json(alice_client: Client, personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id, "work", payload={"repo": "acme/app", "n": [1, 2]})

    body = drawer(alice_client, todo.id)

    # jsonb orders keys shorter first; the drawer shows them as stored, indented.
    pretty = '{\n  "n": [\n    1,\n    2\n  ],\n  "repo": "acme/app"\n}'
    assert f'<pre class="payload">{pretty.replace(chr(34), "&quot;")}</pre>' in body


def test_died_and_failed_attempts_are_told_apart_newest_first(
    alice_client: Client, personas: Personas
) -> None:
    todo_id = died_then_failed(personas.endpoint_a.id, "work", owner=BOT).todo.id

    body = drawer(alice_client, todo_id)

    blocks = attempt_blocks(body)
    assert list(blocks) == [2, 1]  # newest first
    failed, died = blocks[2], blocks[1]
    assert 'class="badge outcome-failed"' in failed and "failed: reported by its holder" in failed
    assert "outcome-died" not in failed
    assert 'class="badge outcome-died"' in died and "died: lease expired, reaped" in died
    assert "outcome-failed" not in died
    assert '<li class="attempt died"' in body and '<li class="attempt failed"' in body
    assert "the build is red" in failed
    assert "attempt 2 of 5" in failed and "attempt 1 of 5" in died
    assert "endpoint agent-a" in failed and "harness/run-2" in failed
    assert "→ retry_scheduled" in failed and "→ requeued" in died
    assert "2 attempts in all" in body


def test_an_operator_attempt_names_the_operator(alice_client: Client, personas: Personas) -> None:
    todo = new_todo(personas.endpoint_a.id, "work")
    lifecycle.operator_claim(personas.alice.id, todo.id, claimant="alice by hand")

    block = attempt_blocks(drawer(alice_client, todo.id))[1]

    assert "operator alice" in block and "alice by hand" in block
    assert f"human:{personas.alice.id}" not in block
    assert "in progress" in block and "so far" in block


def test_a_summary_and_a_payload_with_markup_render_as_inert_text(
    alice_client: Client, personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work", title=XSS, payload={"x": XSS}, work_order=XSS)
    lifecycle.claim(personas.endpoint_a.id, todo.id, owner=BOT, claimant=XSS)
    lifecycle.fail(personas.endpoint_a.id, todo.id, owner=BOT, summary=XSS)

    for url in (reverse("todo_detail", args=[todo.id]), reverse("todo_list")):
        body = alice_client.get(url).content.decode()
        assert "<script>alert(1)</script>" not in body
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body


def test_a_truncated_summary_is_marked(alice_client: Client, personas: Personas) -> None:
    todo_id = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    lifecycle.complete(personas.endpoint_a.id, todo_id, owner=BOT, summary="x" * 5000)

    block = attempt_blocks(drawer(alice_client, todo_id))[1]

    assert '<span class="badge">truncated</span>' in block


@pytest.mark.parametrize(
    ("artifact", "linked"),
    [("https://ci.example.test/run/43", True), ("mcp://cairn/Ab12Cd34", False)],
)
def test_the_artifact_is_a_link_only_for_https(
    alice_client: Client, personas: Personas, artifact: str, linked: bool
) -> None:
    todo_id = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    lifecycle.complete(personas.endpoint_a.id, todo_id, owner=BOT, artifact=artifact)

    body = drawer(alice_client, todo_id)

    assert artifact in body
    assert (f'<a href="{artifact}"' in body) is linked


def test_pruned_attempts_are_counted(alice_client: Client, personas: Personas) -> None:
    Setting.objects.create(key="attempts_max_per_todo", value=2)
    todo_id = claimed(
        personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1", max_attempts=10
    ).todo.id
    for _ in range(3):
        lifecycle.release(personas.endpoint_a.id, todo_id, owner=BOT)
        lifecycle.claim(personas.endpoint_a.id, todo_id, owner=BOT)

    body = drawer(alice_client, todo_id)

    assert TodoAttempt.objects.filter(todo_id=todo_id).count() == 2
    assert "4 attempts in all; 2 oldest pruned from history" in body
    assert list(attempt_blocks(body)) == [4, 3]


def test_the_drawer_makes_the_same_queries_for_1_and_20_attempts(
    alice_client: Client,
    personas: Personas,
    htmx_headers: dict[str, str],
    django_assert_num_queries: Callable[..., Any],
) -> None:
    one = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1").todo.id
    many = claimed(
        personas.endpoint_a.id, "work", owner=BOT, claimant="harness/run-1", max_attempts=30
    ).todo.id
    for _ in range(19):
        lifecycle.release(personas.endpoint_a.id, many, owner=BOT)
        lifecycle.claim(personas.endpoint_a.id, many, owner=BOT)

    # session, user, the todo (endpoint joined, its attempt counts on its row), its attempts
    for todo_id, n in ((one, 1), (many, 20)):
        with django_assert_num_queries(4):
            response = alice_client.get(reverse("todo_detail", args=[todo_id]), **htmx_headers)
        assert len(attempt_blocks(response.content.decode())) == n
