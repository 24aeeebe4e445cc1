"""Vending an endpoint in a real browser, then using the key it showed with the MCP client SDK."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import expect

from switchboard.credentials import DISPLAY_PREFIX_CHARS, key_for_plaintext
from switchboard.models import DRAIN_VERBS, Endpoint
from tests.e2e.conftest import Board, Demo
from tests.live import mcp_client, run
from todos import lifecycle
from todos.models import Source, State, Todo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

KEY_RE = re.compile(r"sbk_[A-Za-z0-9_-]{43}")
MCP_MODE = "2026-07-28"  # the current protocol era (tests/mcp runs both)
MASKED = "sbk_••••••••••••••••••••••••••••••••••••••••••••"


def claim_next_over_mcp(url: str, key: str, queue: str) -> dict[str, Any]:
    """claim_next with the official SDK client, as an agent would call it.

    In a thread of its own: Playwright's sync API holds an asyncio loop in the test's thread,
    and asyncio.run refuses to start a second one there.
    """

    async def claim() -> dict[str, Any]:
        async with mcp_client(url, key, MCP_MODE) as client:
            result = await client.call_tool("claim_next", {"queue": queue, "claimant": "e2e/1"})
            assert not result.is_error, result.structured_content
            assert isinstance(result.structured_content, dict)
            return result.structured_content

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run, claim()).result(timeout=60)


def test_a_key_vended_in_the_wizard_claims_a_todo_over_mcp(board: Board, demo: Demo) -> None:
    page = board.page
    board.login("demo")
    page.get_by_role("navigation", name="Board").get_by_role("link", name="Endpoints").click()
    expect(page.get_by_role("heading", name="Endpoints")).to_be_visible()
    expect(page.get_by_role("link", name="demo-agent")).to_be_visible()
    board.shot("endpoints")

    page.get_by_role("link", name="Vend an endpoint").click()
    page.get_by_label("Name").fill("CI fixer")
    page.get_by_label("Slug").fill("ci-fixer")
    verbs = page.locator("fieldset input[type=checkbox][name=verbs]")
    expect(verbs.and_(page.locator(":checked"))).to_have_count(len(DRAIN_VERBS))
    board.shot("vend-wizard")
    page.get_by_role("button", name="Create the endpoint and its key").click()

    key = page.locator("#key").inner_text().strip()
    assert KEY_RE.fullmatch(key), key
    mcp_url = board.live.mcp_url("ci-fixer")
    expect(page.locator("#cfg-any")).to_contain_text(f"URL: {mcp_url}")
    expect(page.locator("#cfg-any")).to_contain_text("Authorization: Bearer $SWITCHBOARD_KEY")
    expect(page.locator("#cfg-export")).to_have_text(f"export SWITCHBOARD_KEY={key}")
    expect(page.locator("#cfg-json")).to_contain_text('"Bearer ${SWITCHBOARD_KEY}"')
    expect(page.locator("#cfg-json")).not_to_contain_text(key)
    expect(page.locator("#cfg-claude")).to_contain_text(mcp_url)
    board.tidy_for_the_docs(key, MASKED)
    board.shot("vend-key")

    # An agent given that key and URL drains the endpoint's queue.
    endpoint = Endpoint.objects.get(slug="ci-fixer", owner__username="demo")
    todo = lifecycle.create(endpoint.id, queue="ci", title="Fix the build with the new key")
    claimed = claim_next_over_mcp(mcp_url, key, "ci")
    assert claimed["empty"] is False and claimed["todo"]["id"] == todo.id
    assert claimed["todo"]["owner"] == f"endpoint:{endpoint.id}"
    assert Todo.objects.get(id=todo.id).state == State.CLAIMED

    # A reload shows the key no more and mints nothing (the page was a GET after a redirect);
    # it lands on the endpoint's page, as "Done" would.
    page.reload()
    expect(page.get_by_text("A key is shown only once")).to_be_visible()
    expect(page.locator("#key")).to_have_count(0)
    expect(page.get_by_role("heading", name="ci-fixer")).to_be_visible()
    keys = page.locator("#keys tbody tr")
    expect(keys).to_have_count(1)
    expect(keys.first).to_contain_text(f"{key[:DISPLAY_PREFIX_CHARS]}…")  # its first characters
    expect(keys.first).not_to_contain_text(key)
    expect(keys.first).not_to_contain_text("never")  # the MCP call used it
    expect(keys.first.locator(".badge")).to_have_text("live")
    board.tidy_for_the_docs(key, MASKED)
    board.shot("endpoint")

    # The Board shows the claim the agent made.
    page.get_by_role("link", name="Its todos").click()
    expect(page.locator("tbody tr.row")).to_have_count(1)
    page.get_by_role("link", name="Fix the build with the new key").click()
    attempt = page.locator("#drawer #attempt-1")
    expect(attempt).to_contain_text("endpoint ci-fixer")
    expect(attempt).to_contain_text("e2e/1")
    expect(attempt.locator(".badge.outcome-open")).to_be_visible()


def test_revoking_a_key_asks_first_and_no_keeps_it(board: Board, demo: Demo) -> None:
    """A destructive single action asks on a page of its own (no script, the CSP allows none
    inline): "No" changes nothing, "Yes" revokes."""
    page = board.page
    board.login("demo")
    board.goto("/endpoints/demo-agent")
    row = page.locator("#keys tbody tr").first
    expect(row.locator(".badge")).to_have_text("live")

    row.get_by_role("button", name="Revoke…").click()
    expect(page.get_by_role("heading", name=re.compile(r"^Revoke key sbk_"))).to_be_visible()
    expect(page.get_by_text("It is the last live key of demo-agent")).to_be_visible()
    page.get_by_role("link", name="No, keep it").click()
    expect(page.get_by_role("heading", name="demo-agent")).to_be_visible()
    expect(row.locator(".badge")).to_have_text("live")
    assert demo.seeded.key and key_for_plaintext(demo.seeded.key) is not None

    row.get_by_role("button", name="Revoke…").click()
    page.get_by_role("button", name=re.compile(r"^Yes, revoke key")).click()
    expect(page.get_by_text(re.compile(r"^Revoked key sbk_"))).to_be_visible()
    expect(page.locator("#keys tbody tr").first.locator(".badge")).to_have_text("revoked")
    assert key_for_plaintext(demo.seeded.key) is None


def test_rotating_a_secret_asks_first(board: Board, demo: Demo) -> None:
    page = board.page
    board.login("demo")
    board.goto("/sources/demo-ci")
    page.get_by_role("button", name="Rotate the secret…").click()
    expect(page.get_by_role("heading", name="Rotate the secret of demo-ci?")).to_be_visible()
    assert Source.objects.get(slug="demo-ci").secret == demo.seeded.webhook_secret

    page.get_by_role("button", name="Yes, rotate the secret").click()
    secret = page.locator("#secret").inner_text().strip()
    assert secret and secret != demo.seeded.webhook_secret
    assert Source.objects.get(slug="demo-ci").secret == secret
    page.reload()  # a GET after the redirect: nothing is posted again, the secret is gone
    expect(page.get_by_text("A secret is shown only once")).to_be_visible()
    assert Source.objects.get(slug="demo-ci").secret == secret
