"""Lease countdowns in a real browser: static/lease.js ticks them down every second on the
endpoint's page (its claims), the todo's page and the drawer."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Locator, expect

from switchboard import demo as demo_data
from switchboard.models import Endpoint
from tests.e2e.conftest import PHONE, Board, Demo
from todos import lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

COUNTDOWN = re.compile(r"^(?:(\d+) min )?(?:(\d+) s )?left$")
LEASE_SECONDS = 600


def seconds_left(countdown: Locator) -> int:
    """The seconds a countdown's words say: "9 min 52 s left" → 592."""
    text = countdown.inner_text().strip()
    match = COUNTDOWN.match(text)
    assert match, text
    minutes, secs = match.groups()
    return int(minutes or 0) * 60 + int(secs or 0)


def assert_ticks_down(board: Board, countdown: Locator) -> None:
    """The countdown shows the lease's seconds left, and two seconds later shows fewer: the
    page is not reloaded in between, so only the script can have changed it."""
    expect(countdown).to_have_count(1)
    expect(countdown).to_have_attribute(
        "title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$")
    )
    before = seconds_left(countdown)
    assert LEASE_SECONDS - 60 < before <= LEASE_SECONDS
    board.page.wait_for_timeout(2500)
    after = seconds_left(countdown)
    assert before - 5 <= after < before, (before, after)


def test_the_lease_counts_down_on_the_endpoint_page_the_todo_page_and_the_drawer(
    board: Board, demo: Demo
) -> None:
    todo = lifecycle.create(demo.endpoint_id, queue="ci-failures", title="Flaky login test")
    lifecycle.claim(demo.endpoint_id, todo.id, owner=demo_data.BOT, lease_ttl_seconds=LEASE_SECONDS)
    page = board.page
    board.login("demo")

    board.goto(f"/endpoints/{demo_data.ENDPOINT_SLUG}")
    expect(page.get_by_role("heading", name="Claims")).to_be_visible()
    row = page.locator(f'#claims tr[data-todo="{todo.id}"]')
    expect(row).to_contain_text("Flaky login test")
    expect(row).to_contain_text(demo_data.BOT)
    assert_ticks_down(board, row.locator("time[data-lease-left]"))
    expect(page.locator("#fleet .subscriptions")).to_contain_text("0")

    row.get_by_role("link", name="Flaky login test").click()
    expect(page.get_by_role("heading", name="Flaky login test")).to_be_visible()
    assert_ticks_down(board, page.locator("main time[data-lease-left]"))

    board.goto("/")
    page.locator(f"#row-{todo.id} td.title a").click()
    drawer = page.locator("#drawer")
    expect(drawer).to_contain_text("Lease")
    # Swapped in by htmx after the page loaded: it counts from its own render.
    assert_ticks_down(board, drawer.locator("time[data-lease-left]"))


def test_the_endpoint_page_fits_a_phone(open_board: Callable[..., Board], demo: Demo) -> None:
    todo = lifecycle.create(
        demo.endpoint_id, queue="ci-failures", title="Flaky login test in the checkout flow"
    )
    lifecycle.claim(
        demo.endpoint_id,
        todo.id,
        owner=demo_data.BOT,
        claimant="demo-bot/run-12",
        lease_ttl_seconds=LEASE_SECONDS,
    )
    Endpoint.objects.filter(pk=demo.endpoint_id).update(push_url="https://agent.example.com/ring")
    board = open_board(viewport=PHONE)
    page = board.page
    board.login("demo")

    board.goto(f"/endpoints/{demo_data.ENDPOINT_SLUG}")
    row = page.locator(f'#claims tr[data-todo="{todo.id}"]')
    expect(row).to_contain_text("demo-bot/run-12")
    # Nothing wider than the screen: no sideways scrolling of the page or inside a table's box.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    for scroller in page.locator(".scroll-x").all():
        assert scroller.evaluate("el => el.scrollWidth <= el.clientWidth")
    # The push URL's field and the claim, read as a card, inside the screen.
    shown = [page.get_by_role("textbox", name="Push URL")]
    shown += row.locator("td[data-label]:visible").all()
    assert len(shown) == 5  # the field, and the todo, queue, holder and lease
    for element in shown:
        box = element.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
