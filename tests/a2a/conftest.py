"""The A2A tests' live server: the daphne process of ``tests/live.py`` on the test database."""

from __future__ import annotations

import pytest

from tests.live import LiveServer


@pytest.fixture
def live(live_daphne: LiveServer) -> LiveServer:
    return live_daphne
