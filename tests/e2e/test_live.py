"""The live trail in a real browser: an agent's note over MCP shows on the open page without
a reload, and after the socket drops and the ws extension reconnects, a note sent meanwhile
shows once.

The drop is real: the browser's TCP connection to the server is aborted (``ss -K``, which needs
root and a kernel with socket destruction, as the project's machines have), so the page sees
an abnormal closure (1006) exactly as after a network failure, and the extension's own
reconnect brings the socket back. A socket closed from JavaScript would not do: the extension
reconnects only after a drop, never after a close the page asked for.
"""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.base import Personas
from tests.e2e.conftest import Board
from tests.live import mcp_client, run
from todos import lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]

MCP_MODE = "2026-07-28"
SHOWN_MS = 2000  # the promise: an open page shows a note within 2 s of the call
RECONNECT_DELAY_MS = 2000  # the gap the test sends a note in, while the socket is down
# What the page's socket does, in order, as the ws extension reports it.
WATCH_SOCKET = """
window.__socket = [];
document.addEventListener('htmx:wsOpen', () => window.__socket.push('open'));
document.addEventListener('htmx:wsClose',
    (e) => window.__socket.push('close ' + e.detail.event.code));
"""


def over_mcp(board: Board, key: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call with the official SDK client, as the agent would make it (in a thread of
    its own: Playwright's sync API holds an asyncio loop in the test's thread)."""

    async def call() -> dict[str, Any]:
        async with mcp_client(board.live.mcp_url("agent-a"), key, MCP_MODE) as client:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.structured_content
            assert isinstance(result.structured_content, dict)
            return result.structured_content

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run, call()).result(timeout=60)


def drop_connections_to(port: int) -> None:
    """Abort every TCP connection to the server's port from this machine (the browser's)."""
    done = subprocess.run(
        ["ss", "-K", "dst", "127.0.0.1", "dport", "=", f":{port}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    )
    assert done.returncode == 0, f"ss -K failed (it needs root): {done.stderr}"


def socket_log(board: Board) -> list[str]:
    return list(board.page.evaluate("window.__socket"))


def wait_for(board: Board, *events: str) -> None:
    """Wait until the socket has done ``events``, in order, and nothing else."""
    deadline = time.monotonic() + 10
    while socket_log(board) != list(events):
        assert time.monotonic() < deadline, f"not {list(events)}: {socket_log(board)}"
        board.page.wait_for_timeout(50)


def test_a_note_shows_on_the_open_trail_and_a_reconnect_shows_what_it_missed_once(
    board: Board, personas: Personas
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="live", title="Watched live")
    over_mcp(board, personas.key_a, "claim", {"id": todo.id})
    page = board.page
    board.login("alice")
    page.add_init_script(WATCH_SOCKET)
    board.goto(f"/todos/{todo.id}")
    wait_for(board, "open")
    live = page.locator(f"#sb-trail-live-{todo.id}")
    expect(live).to_be_empty()
    page.evaluate("window.__painted = true")  # gone if the page reloads

    first = "Reproduced the timeout; bisecting the migrations."
    over_mcp(board, personas.key_a, "heartbeat", {"id": todo.id, "note": first})
    expect(live.get_by_text(first)).to_be_visible(timeout=SHOWN_MS)

    # The extension's own backoff (full jitter, growing to a minute) is what runs in use; the
    # test widens its first delay so that the next note surely falls while the socket is down.
    assert page.evaluate("htmx.config.wsReconnectDelay") == "full-jitter"
    page.evaluate(f"htmx.config.wsReconnectDelay = () => {RECONNECT_DELAY_MS}")
    drop_connections_to(board.live.port)
    wait_for(board, "open", "close 1006")
    missed = "Found it: the lock is held by the old release."
    over_mcp(board, personas.key_a, "heartbeat", {"id": todo.id, "note": missed})
    assert socket_log(board) == ["open", "close 1006"], "reconnected before the note was sent"

    wait_for(board, "open", "close 1006", "open")  # the extension's reconnect
    expect(live.get_by_text(missed)).to_be_visible(timeout=SHOWN_MS)
    for note in (first, missed):
        expect(page.locator(".trail-entry", has_text=note)).to_have_count(1)
    assert socket_log(board) == ["open", "close 1006", "open"]
    assert page.evaluate("window.__painted") is True
    board.shot("trail-live")
