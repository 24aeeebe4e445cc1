"""Shared fixtures. Every test runs on real PostgreSQL (DATABASE_URL, or the embedded server).

Test mode comes from the settings module pyproject names, switchboard/settings_test.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from switchboard import embedded, runtime_settings
from tests.base import Personas, make_personas

# The live daphne servers (tests/live.py), shared by the MCP and the browser tests.
pytest_plugins = ["tests.live"]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings: None) -> None:
    """Start the embedded PostgreSQL (DATABASE_URL unset) before the test database is created.

    pytest-django's django_db_setup asks for this fixture first, so only a run with tests that
    use the database starts the server; this process holds it until the run ends.
    """
    embedded.ensure_running()


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


@pytest.fixture
def admin_client(client: Client, personas: Personas) -> Client:
    """Django's test client, logged in as the superuser persona."""
    client.force_login(personas.admin)
    return client
