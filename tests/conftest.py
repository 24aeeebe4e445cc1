"""Shared fixtures. Every test runs on real PostgreSQL (DATABASE_URL, or the embedded server).

Test mode comes from the settings module pyproject names, switchboard/settings_test.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from django.test import Client

from switchboard import embedded, runtime_settings
from switchboard.lib import changefeed, dbthread
from tests.base import Personas, make_personas
from tests.concurrency.harness import raw_connection

# The live daphne servers (tests/live.py), shared by the MCP and the browser tests.
pytest_plugins = ["tests.live"]


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings: None) -> None:
    """Start the embedded PostgreSQL (DATABASE_URL unset) before the test database is created.

    pytest-django's django_db_setup asks for this fixture first, so only a run with tests that
    use the database starts the server; this process holds it until the run ends.
    """
    embedded.ensure_running()


# Sessions still open on the test database once every live server has stopped: this process's
# own, from threads (an event loop's executor) that ended without closing Django's connection.
_LEFTOVER_SESSIONS = """
    SELECT pid, application_name, pg_terminate_backend(pid) FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid()
"""


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None) -> Iterator[None]:
    """pytest-django's test database; before it is dropped (after the live servers, which ask
    for it, have stopped), this process's connections to it closed: the change feed's announcer
    and listener (a test's event loop may have closed under it), then any session a worker
    thread left open, so the drop does not find the database "accessed by other users"."""
    yield
    changefeed.ANNOUNCER.close()
    changefeed.FEED.close()
    with raw_connection(autocommit=True) as conn:
        conn.execute(_LEFTOVER_SESSIONS)


@pytest.fixture
def hop_pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[int], dbthread.Pool]]:
    """Makes ``dbthread``'s pool for the test: ``hop_pool(n)`` puts a pool of ``n`` threads of
    the test's own in place; its threads and their connections are closed after the test."""
    made: list[dbthread.Pool] = []

    def install(threads: int) -> dbthread.Pool:
        pool = dbthread.Pool(threads)
        monkeypatch.setattr(dbthread, "_pool", pool)
        made.append(pool)
        return pool

    yield install
    for pool in made:
        pool.shutdown()


@pytest.fixture
def one_hop_thread(hop_pool: Callable[[int], dbthread.Pool]) -> dbthread.Pool:
    """``dbthread``'s hops on one thread of their own, so every call meets the same connection
    (as a busy server's threads do)."""
    return hop_pool(1)


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
