"""The trail page and the Activity feed in a real browser: a todo's story, the feed across
todos, and the rail's unread badge that opening the feed clears."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from switchboard import demo as demo_data
from switchboard.models import Human
from tests.activity import helpers
from tests.e2e.conftest import Board, Demo
from todos import lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def test_the_trail_tells_the_story_and_the_feed_links_to_it(board: Board, demo: Demo) -> None:
    page = board.page
    todo_id = demo.died_then_failed
    operator = Human.objects.get(username="demo")
    # A Board retry, then a third attempt with a note (the rows their writers will add).
    assert helpers.board(operator.id, "retry", todo_id) == 1
    lifecycle.claim(demo.endpoint_id, todo_id, owner=demo_data.BOT, claimant="demo-bot/run-8")
    note = "The lock is gone; rerunning the deploy."
    assert helpers.agent_note(demo.endpoint_id, todo_id, demo_data.BOT, note) == 2
    board.login("demo")

    # The rail counts what the demo operator has not seen yet.
    unread = page.locator(".rail .badge.unread")
    expect(unread).to_be_visible()

    board.goto(f"/todos/{todo_id}")
    expect(page.get_by_role("heading", name="Deploy to staging times out")).to_be_visible()
    died, failed, running = (page.locator(f"#attempt-{n}") for n in (1, 2, 3))
    expect(died.locator(".badge.outcome-died")).to_have_text("died: lease expired, reaped")
    expect(failed.locator(".badge.outcome-failed")).to_have_text("failed: reported by its holder")
    expect(running).to_contain_text("demo-bot/run-8")
    expect(running).to_contain_text(note)
    expect(running).to_contain_text("last heartbeat")
    expect(page.locator("#activity-1")).to_contain_text("demo retried it")
    expect(page.locator(f"#sb-trail-live-{todo_id}")).to_be_attached()
    # Oldest first: the creation, then the attempts in order.
    tops = page.locator(".timeline > *").evaluate_all("els => els.map(e => e.id)")
    assert tops.index("created") < tops.index("attempt-1") < tops.index("attempt-2")
    assert tops.index("attempt-2") < tops.index("activity-1") < tops.index("attempt-3")
    board.shot("trail")

    page.get_by_role("link", name="Activity").click()
    expect(page.get_by_role("heading", name="Activity", exact=True)).to_be_visible()
    feed = page.get_by_role("list", name="Activity, newest first")
    expect(feed.locator(".feed-entry").first).to_contain_text("The lock is gone")
    expect(feed).to_contain_text("died: lease expired, reaped")
    # Opening the feed marked it read: the badge is gone, here and on the next page.
    expect(unread).to_have_count(0)
    board.shot("activity")

    feed.locator(".feed-entry").first.get_by_role("link").click()
    expect(page).to_have_url(board.live.url(f"/todos/{todo_id}#activity-2"))
    expect(page.locator("#activity-2")).to_be_in_viewport()
    expect(page.locator(".rail .badge.unread")).to_have_count(0)


# Every stamp of the entries on the page: whether it is drawn whole (its box holds its text),
# how far its right edge is from its entry's text, and its box's width.
STAMPS = """els => els.map(el => {
    const what = el.parentElement.querySelector(':scope > .what');
    return {text: el.textContent, whole: el.scrollWidth <= el.clientWidth,
            gap: what.getBoundingClientRect().left - el.getBoundingClientRect().right,
            width: Math.round(el.getBoundingClientRect().width)};
})"""


def test_the_trail_and_the_feed_show_whole_stamps_beside_their_text(
    board: Board, demo: Demo
) -> None:
    page = board.page
    board.login("demo")

    for path, entries in (
        (f"/todos/{demo.died_then_failed}", ".trail-entry > time.when"),
        ("/activity/", ".feed-entry > time.when"),
    ):
        board.goto(path)
        stamps = page.locator(entries).evaluate_all(STAMPS)
        assert stamps, path
        for stamp in stamps:
            assert stamp["text"].endswith(" UTC"), stamp
            assert stamp["whole"] and stamp["gap"] > 0, (path, stamp)
        # One column: every entry's stamp as wide as the others.
        assert len({stamp["width"] for stamp in stamps}) == 1, (path, stamps)
