"""The todo list updates itself in a real browser: a todo enqueued while the list is open
appears without a reload, its claim redraws its row, the open drawer and its row's selection
stay; scrolled away from the top, new todos wait behind an "N new" bar instead of moving the
rows under the reader."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from switchboard import demo as demo_data
from tests.e2e.conftest import Board, Demo
from todos import lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

SHOWN_MS = 3000  # the promise is a second; a loaded CI machine gets some slack


def wait_true(page: Page, expression: str, seconds: float = 10) -> None:
    """Wait until ``expression`` is true on the page. Polled from here: wait_for_function's
    in-page poll evaluates a string, which the Board's CSP (script-src 'self', no
    'unsafe-eval') refuses once the first check is false."""
    deadline = time.monotonic() + seconds
    while page.evaluate(expression) is not True:
        assert time.monotonic() < deadline, f"{expression} still false after {seconds} s"
        page.wait_for_timeout(50)


def wait_open(board: Board) -> None:
    """Wait until the list's socket is open (a todo enqueued before would be on the page)."""
    wait_true(board.page, "window.__open === true")


WATCH_OPEN = "document.addEventListener('htmx:wsOpen', () => { window.__open = true; });"
# The drawer's swap scrolls it into view (hx-swap "show:#drawer:top") when it settles, which may
# be after its content is visible.
WATCH_DRAWER = (
    "document.addEventListener('htmx:afterSettle', (e) => {"
    " if (e.detail.target && e.detail.target.id === 'drawer') window.__drawer = true; });"
)


def stay_at_top(page: Page, seconds: float = 10, still: float = 0.5) -> None:
    """Scroll to the top until the page stays there for ``still`` seconds."""
    deadline = time.monotonic() + seconds
    since = None
    while True:
        now = time.monotonic()
        if page.evaluate("window.scrollY") != 0:
            page.evaluate("window.scrollTo(0, 0)")
            since = None
        elif since is None:
            since = now
        elif now - since >= still:
            return
        assert now < deadline, f"the page did not stay at the top for {still} s"
        page.wait_for_timeout(50)


def test_a_todo_enqueued_while_the_list_is_open_appears_without_a_reload(
    open_board: Callable[..., Board], demo: Demo
) -> None:
    board = open_board({"width": 1280, "height": 500})
    page = board.page
    page.add_init_script(WATCH_OPEN)
    page.add_init_script(WATCH_DRAWER)
    board.login("demo")
    board.goto("/?queue=ci-*")
    wait_open(board)
    url = page.url
    first = page.locator("#todo-rows tr.row").first
    first.locator("td.title a").click()
    expect(page.locator("#drawer")).to_be_visible()
    wait_true(page, "window.__drawer === true")
    selected = first.get_attribute("id")
    page.evaluate("window.__marker = 'same page'")
    # Opening the drawer scrolled to it: back at the top before the todo comes (scrolled away,
    # it would wait behind "N new").
    stay_at_top(page)

    todo = lifecycle.create(demo.endpoint_id, queue="ci-new", title="Appeared by itself")
    lifecycle.create(demo.endpoint_id, queue="triage", title="Not this filter")
    row = page.locator(f"#row-{todo.id}")
    expect(row).to_be_visible(timeout=SHOWN_MS)
    expect(row.locator(".badge")).to_have_text("pending")
    assert page.locator("#todo-rows tr.row").first.get_attribute("id") == f"row-{todo.id}"
    expect(page.get_by_text("Not this filter")).to_have_count(0)

    lifecycle.claim(demo.endpoint_id, todo.id, owner=demo_data.BOT, claimant="demo-bot/run-9")
    expect(row.locator(".badge")).to_have_text("claimed", timeout=SHOWN_MS)
    expect(row).to_contain_text("demo-bot/run-9")
    lifecycle.complete(demo.endpoint_id, todo.id, owner=demo_data.BOT, result={"ok": True})
    expect(row.locator(".badge")).to_have_text("completed", timeout=SHOWN_MS)

    # No reload: the same document, URL (the filter), drawer and selected row.
    assert page.evaluate("window.__marker") == "same page"
    assert page.url == url
    expect(page.locator("#drawer")).to_be_visible()
    expect(page.locator(f"#{selected}")).to_have_class("row selected")

    # Scrolled away from the top, a new todo waits behind the bar; nothing moves.
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    wait_true(page, "window.scrollY > 48")
    scrolled = page.evaluate("window.scrollY")
    later = lifecycle.create(demo.endpoint_id, queue="ci-new", title="Waiting behind the bar")
    bar = page.locator("#live-new button")
    expect(bar).to_have_text("1 new todo: show", timeout=SHOWN_MS)
    expect(page.locator(f"#todo-rows #row-{later.id}")).to_have_count(0)
    assert page.evaluate("window.scrollY") == scrolled
    bar.click()
    expect(page.locator(f"#row-{later.id}")).to_be_in_viewport()
    expect(page.locator("#live-new")).to_be_hidden()


def test_under_another_sort_the_bar_counts_new_todos_in_their_number(
    open_board: Callable[..., Board], demo: Demo
) -> None:
    board = open_board()
    page = board.page
    page.add_init_script(WATCH_OPEN)
    board.login("demo")
    board.goto("/?queue=ci-*&sort=title")
    wait_open(board)
    bar = page.locator("#live-new button")

    lifecycle.create(demo.endpoint_id, queue="ci-new", title="Counted, not shown")
    expect(bar).to_have_text("1 new todo matches this filter: reload", timeout=SHOWN_MS)
    lifecycle.create(demo.endpoint_id, queue="ci-new", title="Counted too")
    expect(bar).to_have_text("2 new todos match this filter: reload", timeout=SHOWN_MS)
