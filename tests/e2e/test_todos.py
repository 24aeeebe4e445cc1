"""The todo list and the drawer in a real browser: filters, died vs failed, an operator retry."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import PHONE, Board, Demo
from todos.models import State, Todo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def rows(page: Page) -> Locator:
    return page.locator("tbody tr.row")


def filter_by(page: Page, *, queue: str = "", state: str = "", dead: bool = False) -> None:
    form = page.locator("form.filters")
    form.locator("input[name=queue]").fill(queue)
    form.locator("select[name=state]").select_option(state)
    form.locator("input[name=dead]").set_checked(dead)
    form.get_by_role("button", name="Filter").click()


def open_drawer(page: Page, title: str) -> Locator:
    """Click a row's title; the drawer loads beside the list (htmx), the page stays."""
    page.get_by_role("link", name=title, exact=True).click()
    drawer = page.locator("#drawer")
    expect(drawer.get_by_role("heading", name=title)).to_be_visible()
    return drawer


def test_the_list_filters_by_queue_state_and_dead_letter(board: Board, demo: Demo) -> None:
    page = board.page
    board.login("demo")
    total = Todo.objects.count()
    expect(rows(page)).to_have_count(total)
    counts = page.get_by_role("list", name="Counts by state")
    expect(counts).to_contain_text(f"all {total}")
    board.shot("todos")

    filter_by(page, queue="triage")
    triage = Todo.objects.filter(queue="triage")
    expect(rows(page)).to_have_count(triage.count())
    expect(page.locator("form.filters input[name=queue]")).to_have_value("triage")
    for title in triage.values_list("title", flat=True):
        expect(page.get_by_role("link", name=title, exact=True)).to_be_visible()
    # The counts follow the queue filter: the state tabs count the triage queue only.
    expect(counts).to_contain_text(f"all {triage.count()}")

    filter_by(page, queue="triage", state="pending")
    pending = triage.filter(state=State.PENDING)
    expect(rows(page)).to_have_count(pending.count())
    expect(rows(page).locator(".badge.state-pending")).to_have_count(pending.count())

    filter_by(page, dead=True)
    expect(rows(page)).to_have_count(1)
    expect(rows(page)).to_contain_text("Triage issue #311: login redirects in a loop")
    expect(rows(page).locator(".badge.dead-letter")).to_have_text("dead letter")

    page.get_by_role("link", name="Clear").click()
    expect(rows(page)).to_have_count(total)


def _style(locator: Locator, prop: str, pseudo: str | None = None) -> str:
    return str(
        locator.evaluate(
            "(el, [prop, pseudo]) => getComputedStyle(el, pseudo).getPropertyValue(prop)",
            [prop, pseudo],
        )
    )


def test_the_drawer_tells_an_attempt_that_died_from_one_that_failed(
    board: Board, demo: Demo
) -> None:
    page = board.page
    board.login("demo")
    drawer = open_drawer(page, "Deploy to staging times out")
    expect(page).to_have_url(board.live.url("/"))  # a fragment, not a navigation

    failed, died = drawer.locator("#attempt-2"), drawer.locator("#attempt-1")
    expect(drawer.locator("li.attempt")).to_have_count(2)
    expect(drawer.locator("li.attempt").first).to_have_id("attempt-2")  # newest first
    expect(failed).to_have_class("attempt failed")
    expect(died).to_have_class("attempt died")
    failed_badge = failed.locator(".badge.outcome-failed")
    died_badge = died.locator(".badge.outcome-died")
    expect(failed_badge).to_have_text("failed: reported by its holder")
    expect(died_badge).to_have_text("died: lease expired, reaped")
    expect(failed).to_contain_text("demo-bot/run-7")
    expect(died).to_contain_text("demo-bot/run-6")
    expect(failed).to_contain_text("The migration step waits on a lock")
    expect(drawer).to_contain_text("2 attempts in all")

    # Told apart by more than the word: a dagger on a solid dark badge and a dashed edge for
    # the attempt that died, a cross on an outlined badge and a solid red edge for the failure.
    assert _style(died_badge, "content", "::before") == '"† "'
    assert _style(failed_badge, "content", "::before") == '"✕ "'
    assert _style(died, "border-left-style") == "dashed"
    assert _style(failed, "border-left-style") == "solid"
    assert _style(failed_badge, "background-color") == "rgba(0, 0, 0, 0)"
    assert _style(died_badge, "background-color") != _style(failed_badge, "background-color")
    assert _style(failed_badge, "border-top-style") == "solid"
    board.shot("drawer")

    # "close" empties the drawer (a listener in board.js: the CSP allows no eval for hx-on).
    drawer.get_by_role("button", name="close").click()
    expect(page.locator("#drawer")).to_be_empty()
    drawer = open_drawer(page, "Deploy to staging times out")
    drawer.get_by_role("link", name="open as page").click()
    expect(page).to_have_url(board.live.url(f"/todos/{demo.died_then_failed}"))
    expect(page.locator("#attempt-1 .badge.outcome-died")).to_be_visible()
    expect(page.locator("#attempt-2 .badge.outcome-failed")).to_be_visible()
    board.shot("todo-page")


def test_retrying_a_dead_lettered_todo_puts_it_back_to_pending(board: Board, demo: Demo) -> None:
    page = board.page
    board.login("demo")
    filter_by(page, dead=True)
    title = "Triage issue #311: login redirects in a loop"
    drawer = open_drawer(page, title)
    expect(drawer.locator(".badge.dead-letter")).to_be_visible()

    drawer.get_by_role("button", name="Retry").click()

    expect(drawer.locator("dd .badge.state-pending")).to_have_text("pending")
    expect(drawer.locator(".badge.dead-letter")).to_have_count(0)
    # The row in the list re-renders too (an out-of-band swap), without reloading the page.
    todo_id = demo.todo_ids["dead_letter"]
    expect(page.locator(f"#row-{todo_id} .badge.state-pending")).to_have_text("pending")
    expect(page.locator(f"#row-{todo_id} .badge.dead-letter")).to_have_count(0)
    todo = Todo.objects.get(id=todo_id)
    assert todo.state == State.PENDING and todo.finished_at is None


def test_the_list_and_drawer_fit_a_phone(open_board: Callable[..., Board], demo: Demo) -> None:
    board = open_board(viewport=PHONE)
    page = board.page
    board.login("demo")
    # Nothing wider than the screen: no sideways scrolling.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(page.locator("thead th.hide-narrow").first).to_be_hidden()
    board.shot("todos-phone")

    drawer = open_drawer(page, "Deploy to staging times out")
    # Below the list on a narrow screen, scrolled into view. Both positions are read in one
    # script and relative to the document: htmx scrolls the drawer into view after the swap, so
    # two separate viewport-relative reads could straddle the scroll.
    table_bottom, drawer_top = page.evaluate(
        """() => {
            const top = (el) => el.getBoundingClientRect().top + window.scrollY;
            const table = document.querySelector("table");
            return [top(table) + table.getBoundingClientRect().height,
                    top(document.querySelector("#drawer"))];
        }"""
    )
    assert drawer_top >= table_bottom
    expect(drawer.get_by_role("heading", name="Deploy to staging times out")).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def test_times_are_relative_with_the_absolute_time_on_hover(board: Board, demo: Demo) -> None:
    page = board.page
    board.login("demo")
    completed = demo.todo_ids["completed"]
    row = page.locator(f"#row-{completed}")

    created = row.locator("time[data-relative]").first
    # The demo's todos arrived over the last hour and a half (switchboard/demo.py AGES_MINUTES).
    expect(created).to_have_text(re.compile(r"^(\d+ min ago|1 h ago)$"))
    expect(created).to_have_attribute("title", re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$"))
    # Finished, and how long it took, in the list.
    expect(row.locator("td.finished time[data-relative]")).to_have_count(1)
    expect(row.locator("td.finished")).to_contain_text(re.compile(r"· \d+(\.\d)? s"))

    # board.js keeps the words current from the datetime, in the server's words.
    ten_minutes_ago = "new Date(Date.now() - 10 * 60 * 1000 - 5000).toISOString()"
    created.evaluate(f"el => el.setAttribute('datetime', {ten_minutes_ago})")
    page.evaluate("document.dispatchEvent(new Event('htmx:afterSettle'))")
    expect(created).to_have_text("10 min ago")


def test_an_operators_lease_shows_their_name(board: Board, demo: Demo) -> None:
    page = board.page
    board.login("demo")
    row = page.locator("tbody tr.row").filter(has=page.locator(".badge.state-pending")).first
    row.locator("td.title a").click()
    page.locator("#drawer").get_by_role("button", name="Claim").click()
    expect(page.locator("#drawer")).to_contain_text("Held by")
    # The claimant label the claim chose; the holder's name is its hover title.
    expect(page.locator("#drawer dl")).to_contain_text("demo on the Board")
    expect(page.locator("#drawer dl .claimant")).to_have_attribute("title", "operator demo")
    expect(page.locator("#drawer dl")).not_to_contain_text("human:")


def test_a_search_typed_in_the_list_finds_todos_by_payload_text_and_by_id(
    board: Board, demo: Demo
) -> None:
    page = board.page
    board.login("demo")
    search = page.locator("form.filters input[name=q]")

    # "deploy-staging" is only in the payload of the todo that died, then failed.
    search.fill("deploy-staging")
    search.press("Enter")
    expect(rows(page)).to_have_count(1)
    expect(rows(page)).to_contain_text("Deploy to staging times out")
    expect(search).to_have_value("deploy-staging")
    expect(page.get_by_role("list", name="Counts by state")).to_contain_text("all 1")
    board.shot("todos-search")

    # A whole id finds that todo; the drawer opens from the row as before.
    dead_letter = demo.todo_ids["dead_letter"]
    search.fill(dead_letter)
    search.press("Enter")
    expect(rows(page)).to_have_count(1)
    expect(page.locator(f"#row-{dead_letter}")).to_be_visible()
    open_drawer(page, "Triage issue #311: login redirects in a loop")

    # Too short a search is said on the page, and lists nothing.
    search.fill("ab")
    search.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("three letters or digits in a row")
    expect(rows(page)).to_have_count(0)


def test_sorting_by_title_from_the_column_header(board: Board, demo: Demo) -> None:
    page = board.page
    board.login("demo")

    page.locator("thead").get_by_role("link", name="Todo").click()
    titles = [t.strip() for t in rows(page).locator("td.title a").all_inner_texts()]
    # PostgreSQL's collation orders them, whatever Python's would say.
    in_order = Todo.objects.order_by("title", "created_at", "id").values_list("title", flat=True)
    assert titles == list(in_order)
    expect(page.locator("form.filters select[name=sort]")).to_have_value("title")

    page.locator("thead").get_by_role("link", name="Todo").click()
    again = [t.strip() for t in rows(page).locator("td.title a").all_inner_texts()]
    assert again == titles[::-1]
