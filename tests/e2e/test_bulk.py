"""Bulk actions and queue pauses on the Board, in a real browser: the count first, a confirm,
then the todos moved and a message saying how many."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from switchboard import demo as demo_data
from tests.e2e.conftest import Board, Demo
from tests.e2e.test_todos import filter_by, rows
from todos import lifecycle
from todos.models import QueuePause, State, Todo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def _dead_letter(demo: Demo, title: str) -> str:
    todo = lifecycle.create(demo.endpoint_id, queue="triage", title=title, max_attempts=1)
    lifecycle.claim(demo.endpoint_id, todo.id, owner=demo_data.BOT)
    lifecycle.fail(demo.endpoint_id, todo.id, owner=demo_data.BOT, retryable=False)
    return todo.id


def test_bulk_retry_of_a_filters_dead_letters(board: Board, demo: Demo) -> None:
    page: Page = board.page
    extra = [_dead_letter(demo, f"Triage issue #{n}: flaky") for n in (320, 321)]
    dead = [demo.todo_ids["dead_letter"], *extra]
    board.login("demo")
    filter_by(page, queue="triage", dead=True)
    expect(rows(page)).to_have_count(3)

    page.get_by_role("link", name="Retry dead letters…").click()

    expect(page.get_by_role("heading", name="Retry dead letters?")).to_be_visible()
    expect(page.locator("#bulk-count")).to_contain_text("This will retry 3 dead letters")
    assert Todo.objects.filter(id__in=dead, state=State.FAILED).count() == 3  # nothing yet
    page.get_by_role("button", name="Yes, retry 3").click()

    # Back on the list, its filter kept (post/redirect/get), with how many were retried.
    expect(page.get_by_role("status")).to_contain_text("Retried 3 todos.")
    assert re.search(r"[?&]queue=triage", page.url) and "dead=1" in page.url
    expect(rows(page)).to_have_count(0)  # no dead letters left on the queue
    assert Todo.objects.filter(id__in=dead, state=State.PENDING).count() == 3
    filter_by(page, queue="triage", state="pending")
    for todo_id in dead:
        expect(page.locator(f"#row-{todo_id} .badge.state-pending")).to_have_text("pending")


def test_pausing_and_resuming_a_queue(board: Board, demo: Demo) -> None:
    page: Page = board.page
    board.login("demo")
    board.goto(f"/?endpoint={demo_data.ENDPOINT_SLUG}&queue=triage")

    page.get_by_role("link", name="Pause queue triage…").click()
    expect(page.get_by_role("heading", name=re.compile("Pause queue triage"))).to_be_visible()
    page.get_by_role("button", name="Yes, pause triage").click()

    expect(page.get_by_role("status")).to_contain_text("Paused triage on demo-agent.")
    paused = page.get_by_role("region", name="Paused queues")
    expect(paused).to_contain_text("demo-agent · triage")
    assert QueuePause.objects.filter(queue="triage", resumed_at__isnull=True).exists()
    assert lifecycle.claim_next(demo.endpoint_id, ["triage"], owner=demo_data.BOT) is None

    page.get_by_role("link", name="Resume queue triage…").click()
    page.get_by_role("button", name="Yes, resume triage").click()

    expect(page.get_by_role("status")).to_contain_text("Resumed triage on demo-agent.")
    expect(page.get_by_role("region", name="Paused queues")).to_have_count(0)
