"""The MCP tests' live servers: daphne processes from ``tests/live.py`` on the test database.

The tests talk to them over real HTTP with the official MCP client SDK (``mcp_client``), or with
raw HTTP for malformed input. ``live`` is one server; the session fixture ``live_servers`` is two,
so a legacy session can be opened on one and continued on the other. Tests that use them must
commit their rows for the servers to see them: ``pytest.mark.django_db(transaction=True)``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp_types import CallToolResult, TextContent

from tests.live import LiveServer, mcp_client, run

__all__ = ["MODES", "LiveServer", "error_of", "mcp_client", "run"]

MODES = ("2026-07-28", "legacy")


@pytest.fixture
def live(live_daphne: LiveServer) -> LiveServer:
    return live_daphne


def error_of(result: CallToolResult) -> dict[str, Any]:
    """The ``{code, message}`` of a tool error, asserting its shape (docs/guides/agents.md):
    ``isError``, one text block holding ``{"error": {code, message}}``, no structured content."""
    assert result.is_error, result
    assert result.structured_content is None, result.structured_content
    [block] = result.content
    assert isinstance(block, TextContent), block
    body = json.loads(block.text)
    # A claim someone else ended also says why and who (canceled, timed_out, budget_exceeded).
    ended = body.get("error", {}).get("code") in ("canceled", "timed_out", "budget_exceeded")
    keys = {"code", "message", "reason", "by", "by_name"} if ended else {"code", "message"}
    assert set(body) == {"error"} and set(body["error"]) == keys, body
    return dict(body["error"])
