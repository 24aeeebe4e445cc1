"""The MCP tests' live servers: daphne processes from ``tests/live.py`` on the test database.

The tests talk to them over real HTTP with the official MCP client SDK (``mcp_client``), or with
raw HTTP for malformed input. ``live`` is one server; the session fixture ``live_servers`` is two,
so a legacy session can be opened on one and continued on the other. Tests that use them must
commit their rows for the servers to see them: ``pytest.mark.django_db(transaction=True)``.
"""

from __future__ import annotations

import pytest

from tests.live import LiveServer, mcp_client, run

__all__ = ["MODES", "LiveServer", "mcp_client", "run"]

MODES = ("2026-07-28", "legacy")


@pytest.fixture
def live(live_daphne: LiveServer) -> LiveServer:
    return live_daphne
