"""The Overview page in a real browser: the numbers shown match the database, the plots render
as inline SVG with data, a queue row focuses the plots, and the page's poll brings a new sample
in without a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from switchboard import demo as demo_data
from switchboard.lib.sql import fetch_all
from tests.e2e.conftest import Board, Demo
from todos import lifecycle, overview
from todos.overview_views import REFRESH_SECONDS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


@pytest.fixture(autouse=True)
def _no_rollups() -> None:
    """The rollup tables have no model: Django's flush leaves other tests' rows in them."""
    for table in ("overview_minutes", "overview_hours", "overview_marks"):
        fetch_all(f"DELETE FROM {table}", {})


def counts(queue: str) -> dict[str, int]:
    rows = fetch_all(
        """SELECT count(*) FILTER (WHERE t.state = 'pending') AS pending,
                  count(*) FILTER (WHERE t.state = 'claimed') AS in_flight,
                  count(*) FILTER (WHERE t.state = 'failed' AND t.next_retry_at IS NOT NULL)
                      AS retry_due,
                  count(*) FILTER (WHERE t.state = 'failed' AND t.next_retry_at IS NULL) AS dead
             FROM todos t JOIN endpoints e ON e.id = t.endpoint_id
            WHERE e.slug = %(slug)s AND t.queue = %(queue)s""",
        {"slug": demo_data.ENDPOINT_SLUG, "queue": queue},
    )
    return {k: int(v) for k, v in rows[0].items()}


def ended_last_hour(queue: str, ok: bool) -> int:
    rows = fetch_all(
        """SELECT count(*) AS n FROM todo_attempts a JOIN todos t ON t.id = a.todo_id
            WHERE t.queue = %(queue)s AND a.ended_at > now() - interval '1 hour'
              AND (a.outcome = 'completed') = %(ok)s
              AND a.outcome IN ('completed', 'failed', 'lease_expired', 'reaped')""",
        {"queue": queue, "ok": ok},
    )
    return int(rows[0]["n"])


def test_the_overview_shows_the_databases_numbers_and_plots_them(board: Board, demo: Demo) -> None:
    overview.roll_up()
    page = board.page
    board.login("demo")

    page.get_by_role("link", name="Overview").click()
    expect(page.get_by_role("heading", name="Overview", exact=True)).to_be_visible()
    for queue in ("ci-failures", "triage"):
        row = page.locator(f'tr[data-queue="{demo_data.ENDPOINT_SLUG}/{queue}"]')
        expected = counts(queue)
        for key, value in expected.items():
            expect(row.locator(f'td[data-k="{key}"]')).to_have_text(str(value))
        for key, ok in (("completed_hour", True), ("failed_hour", False)):
            n = ended_last_hour(queue, ok)
            expect(row.locator(f'[data-k="{key}"]')).to_have_attribute(
                "title", f"{n} in the last hour"
            )
    assert sum(counts(q)["pending"] for q in ("ci-failures", "triage")) > 0

    # The plots: accessible SVG, with bars for what ended this hour and a line for the depth.
    throughput = page.get_by_role("img", name="Throughput, last hour")
    expect(throughput).to_be_visible()
    bars = throughput.locator("rect")
    assert bars.count() >= 1
    assert float(bars.first.get_attribute("height") or 0) > 0
    depth = page.get_by_role("img", name="Queue depth, last hour")
    expect(depth.locator("path.line-pending")).to_have_count(1)
    assert (depth.locator("path.line-pending").get_attribute("d") or "").startswith("M")
    expect(
        page.get_by_role("img", name="Throughput, last day").locator("rect").first
    ).to_be_attached()
    board.shot("overview")

    # A row focuses the plots on its queue.
    page.get_by_role("link", name=f"{demo_data.ENDPOINT_SLUG} / triage").click()
    expect(
        page.get_by_role("heading", name=f"Plots: {demo_data.ENDPOINT_SLUG} / triage")
    ).to_be_visible()
    expect(page.locator('tr.selected[data-queue$="/triage"]')).to_have_count(1)


def test_the_page_polls_in_the_next_sample(board: Board, demo: Demo) -> None:
    overview.roll_up()
    board.login("demo")
    board.goto("/overview/")
    pending = board.page.locator(
        f'tr[data-queue="{demo_data.ENDPOINT_SLUG}/triage"] td[data-k="pending"]'
    )
    before = counts("triage")["pending"]
    expect(pending).to_have_text(str(before))
    # A mark a reload would wipe.
    board.page.evaluate("window.sbNotReloaded = true")

    lifecycle.create(demo.endpoint_id, queue="triage", title="One more to look at")
    overview.roll_up()

    # No reload: the page's own poll swaps the new numbers in.
    expect(pending).to_have_text(str(before + 1), timeout=(REFRESH_SECONDS + 10) * 1000)
    assert board.page.evaluate("window.sbNotReloaded === true")
