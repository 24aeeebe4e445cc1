"""Webhook sources in a real browser: a source made on the Board, its secret read off the page
and used to sign a GitHub-style delivery sent over HTTP to the live server, the routed event and
its trace, a dropped one and the condition that failed, and the rule tester."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from uuid import uuid4

import httpx2
import pytest
from playwright.sync_api import Locator, Page, expect

from switchboard import demo as demo_data
from switchboard.models import Endpoint, Human
from tests.base import Personas
from tests.e2e.conftest import PHONE, Board, Demo
from tests.factories import RuleFactory, SourceFactory
from tests.live import LiveServer
from todos.intake.routing import sign
from todos.models import Event, Source, Todo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

SECRET_RE = re.compile(r"sbw_[A-Za-z0-9_-]{43}")
MASKED = "sbw_" + "•" * 43
CHECK_RUN_MATCH = {
    "headers": {"X-GitHub-Event": "check_run"},
    "payload": {"action": "completed", "check_run.conclusion": {"in": ["failure", "timed_out"]}},
}


def check_run(conclusion: str) -> dict[str, Any]:
    """A GitHub ``check_run`` delivery's body, as GitHub sends it when a check ends."""
    return {
        "action": "completed",
        "check_run": {
            "name": "test (3.12)",
            "conclusion": conclusion,
            "html_url": "https://github.com/example/shop/runs/1",
        },
        "repository": {"full_name": "example/shop"},
    }


def deliver(live: LiveServer, slug: str, secret: str, payload: Any) -> tuple[str, dict[str, Any]]:
    """POST a signed delivery to /hooks/<slug> over real HTTP, as GitHub would; its delivery id
    and the answer."""
    body = json.dumps(payload).encode()
    delivery = str(uuid4())
    response = httpx2.post(
        live.url(f"/hooks/{slug}"),
        content=body,
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": "check_run",
            "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": sign(secret, body),
        },
        timeout=10,
    )
    assert response.status_code == 202, response.text
    answer: dict[str, Any] = response.json()
    return delivery, answer


def event_row(page: Page, delivery: str) -> Locator:
    """The recent event with that delivery id: a <details> whose summary is the row."""
    return page.locator("details.event").filter(has=page.locator("summary", has_text=delivery))


def fill_rule(page: Page, *, match: str) -> None:
    page.get_by_label("Name").fill("CI failures")
    page.get_by_label("Endpoint").select_option(label="demo-agent (Demo agent)")
    page.get_by_label("Queue").fill("ci-failures")
    page.get_by_label("Match").fill(match)
    page.get_by_label("Title template").fill("Fix {{ check_run.name }}")
    page.get_by_label("Work order template").fill(
        "The check {{ check_run.name }} ended {{ check_run.conclusion }}: {{ check_run.html_url }}"
    )
    page.get_by_label("Max attempts").fill("3")


def test_a_source_made_on_the_board_routes_a_signed_github_delivery_to_a_todo(
    board: Board, demo: Demo
) -> None:
    # As the operator `make run` seeds (its source demo-ci already listed), so the screenshots
    # show what a new operator following docs/guides/webhooks.md sees.
    page = board.page
    board.login("demo")
    page.get_by_role("navigation", name="Board").get_by_role("link", name="Sources").click()
    expect(page.get_by_role("heading", name="Sources")).to_be_visible()
    expect(page.locator("tbody tr.row")).to_have_count(1)
    expect(page.locator("tbody tr.row").first).to_contain_text(demo_data.SOURCE_SLUG)

    # New source: verification is on by default; the secret is shown on this page only.
    page.get_by_role("link", name="New source").click()
    page.get_by_label("Slug").fill("github")
    page.get_by_label("Name").fill("GitHub: example/shop")
    expect(page.get_by_label("Verify signatures")).to_be_checked()
    page.get_by_role("button", name="Create the source").click()
    expect(page.get_by_role("heading", name="Source github is ready")).to_be_visible()
    secret = page.locator("#secret").inner_text().strip()
    assert SECRET_RE.fullmatch(secret), secret
    assert Source.objects.get(slug="github", owner__username="demo").secret == secret
    webhook_url = board.live.url("/hooks/github")
    expect(page.locator("#webhook-url")).to_have_text(webhook_url)
    expect(page.locator("#curl")).to_contain_text(f"SECRET='{secret}'")
    expect(page.locator("#curl")).to_contain_text(f"curl -sS {webhook_url}")
    board.tidy_for_the_docs(secret, MASKED)
    board.shot("source-secret")

    # A reload shows the secret no more and posts nothing (the page was a GET after a redirect).
    page.reload()
    expect(page.get_by_text("A secret is shown only once")).to_be_visible()
    assert secret not in page.content()
    assert Source.objects.get(slug="github", owner__username="demo").secret == secret
    # Creating it again: the slug is taken, said beside the field.
    board.goto("/sources/new")
    page.get_by_label("Slug").fill("github")
    page.get_by_role("button", name="Create the source").click()
    expect(page.get_by_role("heading", name="New source")).to_be_visible()
    expect(page.locator("#id_slug_error")).to_contain_text("already exists")
    expect(page.get_by_label("Slug")).to_have_attribute("aria-describedby", "id_slug_error")
    assert secret not in page.content()
    assert not SECRET_RE.search(page.content())
    board.goto("/sources/github")
    expect(page.get_by_role("heading", name="github")).to_be_visible()
    assert not SECRET_RE.search(page.content())

    # A match the routing language refuses is not saved: the form says why at the field.
    page.get_by_role("link", name="Add a rule").click()
    bad_match = '{"payload": {"check_run.conclusion": {"one_of": ["failure"]}}}'
    fill_rule(page, match=bad_match)
    page.get_by_role("button", name="Add the rule").click()
    errors = page.locator("#id_match_error")
    expect(errors).to_contain_text("unknown operator 'one_of'")
    expect(page.get_by_label("Match")).to_have_value(bad_match)  # kept, to be corrected
    expect(page.get_by_label("Match")).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".errorlist")).to_have_count(1)  # no other field is blamed
    assert not Source.objects.get(slug="github").rules.exists()
    board.shot("rule-form-error")

    page.get_by_label("Match").fill(json.dumps(CHECK_RUN_MATCH))
    page.get_by_role("button", name="Add the rule").click()
    expect(page.get_by_role("status")).to_contain_text("Added rule “CI failures” at position")
    rule = page.locator("li.rule")
    expect(rule).to_have_count(1)
    expect(rule).to_contain_text("demo-agent / ci-failures")
    expect(rule).to_contain_text("Fix {{ check_run.name }}")
    expect(rule.locator("pre").first).to_contain_text('"check_run.conclusion": {')

    # GitHub delivers a failed check run, signed with the secret the page showed.
    routed_id, routed = deliver(board.live, "github", secret, check_run("failure"))
    assert routed["disposition"] == "routed"
    (todo_id,) = routed["todo_ids"]
    page.reload()
    routed_row = event_row(page, routed_id)
    summary = routed_row.locator("summary")
    expect(summary.locator(".badge.disp-routed")).to_have_text("routed")
    expect(summary.locator(".badge.verif-valid")).to_have_text("valid")
    expect(summary.get_by_role("link", name=todo_id)).to_be_visible()
    trace = routed_row.locator("ol.trace")
    expect(trace).to_be_hidden()  # folded until the row is opened
    summary.click()
    expect(trace).to_be_visible()
    expect(trace.locator(".badge.verdict-matched").first).to_have_text("matched")
    expect(trace).to_contain_text("CI failures")
    expect(trace.locator("tr.check-ok")).to_have_count(3)
    trace.get_by_role("link", name=todo_id).click()
    expect(page).to_have_url(board.live.url(f"/todos/{todo_id}"))
    expect(page.get_by_role("heading", name="Fix test (3.12)")).to_be_visible()
    todo = Todo.objects.get(id=todo_id)
    assert (todo.title, todo.queue, todo.endpoint_id) == (
        "Fix test (3.12)",
        "ci-failures",
        demo.endpoint_id,
    )

    # A check run that passed matches no rule: dropped, and the trace shows which condition
    # failed, with what it expected and what the delivery had.
    dropped_id, dropped = deliver(board.live, "github", secret, check_run("success"))
    assert dropped == {"event_id": dropped["event_id"], "disposition": "dropped", "todo_ids": []}
    board.goto("/sources/github")
    dropped_row = event_row(page, dropped_id)
    expect(dropped_row.locator("summary .badge.disp-dropped")).to_have_text("dropped")
    expect(dropped_row.locator("summary")).to_contain_text("none")
    dropped_row.locator("summary").click()
    expect(dropped_row.locator(".badge.verdict-missed")).to_have_text("no match")
    failed = dropped_row.locator("tr.check-not")
    expect(failed).to_have_count(1)
    expect(failed.locator("td")).to_have_text(
        ["payload check_run.conclusion", 'in ["failure", "timed_out"]', '"success"', "✕ not"]
    )
    expect(dropped_row.locator("tr.check-ok")).to_have_count(2)
    expect(page.locator("details.event").first).to_contain_text(dropped_id)  # newest first
    board.tidy_for_the_docs(secret, MASKED)
    board.shot("source-events")

    # The list names its owner, counts the rule and both deliveries, and shows the last one's
    # disposition.
    page.get_by_role("navigation", name="Board").get_by_role("link", name="Sources").click()
    expect(page.locator("tbody tr.row")).to_have_count(2)
    row = page.locator("tbody tr.row").filter(has_text="GitHub: example/shop")
    expect(row.locator("td")).to_have_text(
        ["github", "GitHub: example/shop", "demo", "verified", "1", "2", re.compile(r"dropped$")]
    )
    board.shot("sources")


def test_the_rule_tester_shows_the_todo_a_delivery_would_create_and_creates_nothing(
    board: Board, demo: Demo
) -> None:
    operator = Human.objects.get(username="demo")
    source = SourceFactory(owner=operator, slug="github", name="GitHub: example/shop")
    RuleFactory(
        source=source,
        endpoint=Endpoint.objects.get(id=demo.endpoint_id),
        name="CI failures",
        queue="ci-failures",
        position=1,
        match=CHECK_RUN_MATCH,
        title_template="Fix {{ check_run.name }}",
        work_order_template="The check {{ check_run.name }} ended {{ check_run.conclusion }}: "
        "{{ check_run.html_url }}. Runner: {{ check_run.runner }}",
        max_attempts=3,
    )
    todos_before = Todo.objects.count()
    page = board.page
    board.login("demo")
    board.goto("/sources/github")

    page.locator("#tester-headers").fill("X-GitHub-Event: check_run\nAuthorization: Bearer x")
    page.locator("#tester-payload").fill(json.dumps(check_run("timed_out"), indent=2))
    page.get_by_role("button", name="Route it").click()

    result = page.locator("#tester-result")
    expect(result).to_contain_text("Routed: this delivery would create 1 todo.")
    expect(page).to_have_url(board.live.url("/sources/github"))  # a fragment, not a navigation
    would = result.locator("tbody tr").first
    expect(would.locator("td")).to_have_text(
        [
            "CI failures",
            "demo-agent / ci-failures",
            "Fix test (3.12)",
            "The check test (3.12) ended timed_out: https://github.com/example/shop/runs/1."
            " Runner: ",
            "3",
            "check_run.runner",
        ]
    )
    expect(result.locator(".badge.verdict-matched").first).to_have_text("matched")
    # The secret header was dropped before the rules saw it, as intake drops it.
    expect(result).to_contain_text("Headers the rules saw: x-github-event: check_run")
    expect(result).not_to_contain_text("authorization")
    assert not Event.objects.filter(source=source).exists()
    assert Todo.objects.count() == todos_before
    page.locator("#tester-payload").evaluate("el => { el.scrollTop = 0; }")  # its first line
    board.tidy_for_the_docs()
    board.shot("source-tester")


def test_the_sources_pages_fit_a_phone(
    open_board: Callable[..., Board], personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice, slug="github", secret="s3cret")
    RuleFactory(
        source=source,
        endpoint=personas.endpoint_a,
        queue="ci-fix-for-the-shop",
        match=CHECK_RUN_MATCH,
        title_template="Fix {{ check_run.name }}",
    )
    board = open_board(viewport=PHONE)
    page = board.page
    deliver(board.live, "github", "s3cret", check_run("failure"))
    board.login("alice")

    board.goto("/sources/")
    expect(page.locator("tbody tr.row")).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    # Read as a card: every shown cell, the last event's included, inside the screen, under its
    # column's name, and nothing to scroll sideways inside the table's box either.
    cells = page.locator("tbody tr.row td[data-label]:visible")
    expect(cells).to_have_count(4)
    for i in range(4):
        box = cells.nth(i).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    expect(cells.last).to_contain_text("routed")
    scroller = page.locator(".scroll-x").first
    assert scroller.evaluate("el => el.scrollWidth <= el.clientWidth")
    # The rail is as tall as its links, not stretched over a short page.
    rail = page.get_by_role("navigation", name="Board").bounding_box()
    assert rail is not None and rail["height"] < PHONE["height"] / 4

    board.goto("/sources/github")
    page.locator("details.event summary time").click()
    expect(page.locator("details.event ol.trace")).to_be_visible()
    # The trace's conditions may wrap between words, never inside one: the lines each word of
    # a cell is drawn on, at most one per word.
    lines_per_word = """el => {
        const text = el.firstChild, words = [], range = document.createRange();
        for (const match of text.data.matchAll(/\\S+/g)) {
            range.setStart(text, match.index);
            range.setEnd(text, match.index + match[0].length);
            words.push(new Set([...range.getClientRects()].map(r => Math.round(r.top))).size);
        }
        return words;
    }"""
    cells = page.locator(
        "details.event table.checks td:is([data-label=Condition], [data-label=Expected])"
    )
    assert cells.count() >= 2
    for i in range(cells.count()):
        counted = cells.nth(i).evaluate(lines_per_word)
        assert counted and set(counted) == {1}, (cells.nth(i).inner_text(), counted)
    page.locator("#tester-headers").fill("X-GitHub-Event: check_run")
    page.locator("#tester-payload").fill(json.dumps(check_run("failure")))
    page.get_by_role("button", name="Route it").click()
    expect(page.locator("#tester-result")).to_contain_text("would create 1 todo")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
