"""Shared fixtures. Every test runs on real PostgreSQL (DATABASE_URL, or the embedded server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from switchboard import runtime_settings
from tests.base import Personas, make_personas

# The live daphne servers (tests/live.py), shared by the MCP and the browser tests.
pytest_plugins = ["tests.live"]


@pytest.fixture(autouse=True)
def _fresh_runtime_settings() -> Iterator[None]:
    # A test's settings rows roll back with its transaction; the per-process cache must not
    # carry them into the next test.
    runtime_settings.clear_cache()
    yield
    runtime_settings.clear_cache()


@pytest.fixture
def personas(db: None) -> Personas:
    return make_personas()
