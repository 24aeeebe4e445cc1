"""Agents' words in a real browser: markup in a summary, a title or a payload stays inert text.

Each probe sets ``window.__xss`` if it ever runs. The last step proves that it would: the same
markup put into the page as HTML does try to run, and only the Content-Security-Policy stops it;
the pages' own markup holds no such element, so "undefined" there means escaped.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Locator, Page, expect

from switchboard import demo as demo_data
from tests.e2e.conftest import Board, Demo
from todos import lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

IMG = "<img src=x onerror=window.__xss=1>"
SCRIPT = "<script>window.__xss=2</script>"
TITLE = f"Broken build {IMG}"


def assert_inert(page: Page, drawer: Locator) -> None:
    page.wait_for_load_state("networkidle")  # an injected <img src=x> would have errored by now
    assert page.evaluate("typeof window.__xss") == "undefined"
    expect(drawer.locator("img, script")).to_have_count(0)
    expect(drawer.get_by_role("heading", name=TITLE)).to_be_visible()
    expect(drawer.locator(".payload")).to_contain_text(f'"html": "{IMG}{SCRIPT}"')
    expect(drawer.locator(".work-order")).to_have_text(SCRIPT)
    expect(drawer.locator("#attempt-1 .summary")).to_have_text(f"{IMG} then {SCRIPT}")


def test_markup_from_agents_renders_as_inert_text(board: Board, demo: Demo) -> None:
    todo = lifecycle.create(
        demo.endpoint_id,
        queue="ci-failures",
        title=TITLE,
        payload={"html": IMG + SCRIPT},
        work_order=SCRIPT,
    )
    lifecycle.claim(demo.endpoint_id, todo.id, owner=demo_data.BOT, claimant="demo-bot/run-9")
    lifecycle.fail(demo.endpoint_id, todo.id, owner=demo_data.BOT, summary=f"{IMG} then {SCRIPT}")
    page = board.page
    board.login("demo")

    # In the list, and in the drawer htmx swaps in (htmx would run a <script> it swaps in).
    expect(page.get_by_role("link", name=TITLE)).to_be_visible()
    page.get_by_role("link", name=TITLE).click()
    drawer = page.locator("#drawer")
    assert_inert(page, drawer)

    # And on the todo's own page, its trail.
    board.goto(f"/todos/{todo.id}")
    assert_inert(page, page.locator("#trail"))
    expect(page).to_have_title(f"{TITLE} · Switchboard")

    # The probe works: the same markup inserted as HTML tries to run its handler, and only the
    # Content-Security-Policy (a second wall behind the escaping) stops it.
    page.evaluate(
        "(html) => { document.addEventListener('securitypolicyviolation',"
        " (e) => { window.__blocked = e.effectiveDirective; });"
        " const div = document.createElement('div'); div.innerHTML = html;"
        " document.body.append(div); }",
        IMG,
    )
    page.wait_for_function("window.__blocked !== undefined")
    assert page.evaluate("window.__blocked").startswith("script-src")
    assert page.evaluate("typeof window.__xss") == "undefined"
