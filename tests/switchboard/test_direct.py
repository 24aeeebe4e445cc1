"""Sessions that outlive a transaction (switchboard/lib/direct.py): with DATABASE_DIRECT_URL
set, a pass lock is held on a direct session of its own, which comes back after it dies."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import connection
from django.test import override_settings

from switchboard.lib import direct

pytestmark = pytest.mark.django_db(transaction=True)
KEY = 0x5B_7E57


@pytest.fixture
def direct_settings() -> Iterator[dict[str, Any]]:
    """DATABASE_DIRECT naming the test database itself (no pooler here: the session is what
    matters)."""
    with override_settings(DATABASE_DIRECT=dict(connection.settings_dict)):
        try:
            yield direct.params("test")
        finally:
            direct.close()


def _lock_sessions(params: dict[str, Any]) -> list[int]:
    with psycopg.connect(**{**params, "application_name": "test-observer"}) as observer:
        rows = observer.execute(
            "SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.objid = %s"
            " AND a.application_name = %s",
            [KEY, direct.LOCKS_APPLICATION_NAME],
        ).fetchall()
    return [row[0] for row in rows]


def test_a_pass_lock_is_held_on_a_session_of_its_own_and_released_after(
    direct_settings: dict[str, Any],
) -> None:
    assert direct.pooled()
    with direct.advisory_lock(KEY) as held:
        assert held
        [pid] = _lock_sessions(direct_settings)
        assert pid != connection.cursor().connection.info.backend_pid
        with direct.advisory_lock(KEY) as again:  # the same thread, the same session
            assert again
    assert _lock_sessions(direct_settings) == []


def test_a_pass_lock_another_session_holds_is_not_taken(direct_settings: dict[str, Any]) -> None:
    with psycopg.connect(**direct_settings, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [KEY])
        with direct.advisory_lock(KEY) as held:
            assert not held
        # Unlocked, not left to the close: a closed connection's backend ends (and lets go of
        # its locks) a moment after the client has moved on.
        other.execute("SELECT pg_advisory_unlock(%s)", [KEY])
    with direct.advisory_lock(KEY) as held:
        assert held


def test_the_lock_session_comes_back_after_the_database_ended_it(
    direct_settings: dict[str, Any],
) -> None:
    with direct.advisory_lock(KEY) as held:
        assert held
        [pid] = _lock_sessions(direct_settings)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
    with direct.advisory_lock(KEY) as held:
        assert held
        [again] = _lock_sessions(direct_settings)
    assert again != pid


def test_without_a_direct_url_the_lock_is_taken_on_djangos_connection() -> None:
    assert not direct.pooled()
    with direct.advisory_lock(KEY) as held:
        assert held
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND objid = %s AND pid = pg_backend_pid()",
                [KEY],
            )
            assert cursor.fetchone() == (1,)
