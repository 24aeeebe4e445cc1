"""Activity fixtures: the Board's logged-in clients and intake's webhook source, shared."""

from __future__ import annotations

from tests.board.conftest import alice_client, bob_client, htmx_headers
from tests.intake.conftest import hook

__all__ = ["alice_client", "bob_client", "hook", "htmx_headers"]
