"""Sessions that must outlive a transaction: on a direct connection beside a transaction pooler.

Django's connections may reach PostgreSQL through a pooler in transaction mode (PgBouncer),
which lends each transaction whichever server session is free and takes it back at the commit.
Three things here need one session for longer than a transaction:

- the change feed's listener (``switchboard/lib/changefeed.py``): ``LISTEN`` subscribes the
  session it runs on, so through the pooler the notifications would go to a session lent to
  someone else a moment later;
- the change feed's announcer: it turns ``synchronous_commit`` off for its session;
- a sweeper's pass lock (``todos/sweeps.py``, ``alerts/sweep.py``): a session-level advisory lock
  held across the pass's many transactions. Through the pooler it would be taken on one lent
  session, the pass and its unlock would run on others, and the lock would stay behind on a
  pooled session, covering nothing and released by no one.

``DATABASE_DIRECT_URL`` names the same database without the pooler (the settings' parsed
``DATABASE_DIRECT``); ``params`` gives the libpq parameters of such a session, from it when it is
set and from Django's own database otherwise (no pooler: any connection is a session already).
``advisory_lock`` takes a pass lock on a direct connection of the calling thread's own when
``DATABASE_DIRECT_URL`` is set (made on first use, made again after it fails: losing it releases
its locks, as a dying process's are), on Django's connection otherwise, as before.
docs/decisions/0041-behind-a-transaction-pooler.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, OperationalError
from django.db import connection as django_connection

logger = logging.getLogger(__name__)

LOCKS_APPLICATION_NAME = "switchboard-locks"
# OPTIONS keys Django's PostgreSQL backend consumes itself; the rest are libpq parameters.
_DJANGO_ONLY_OPTIONS = frozenset(
    {"pool", "server_side_binding", "isolation_level", "assume_role", "cursor_factory"}
)
_TRY_LOCK = "SELECT pg_try_advisory_lock(%s)"
_UNLOCK = "SELECT pg_advisory_unlock(%s)"


def pooled() -> bool:
    """Whether Django's connections go through a transaction pooler (``DATABASE_DIRECT_URL``
    names the direct way)."""
    return getattr(settings, "DATABASE_DIRECT", None) is not None


def params(application_name: str) -> dict[str, Any]:
    """libpq parameters for a session of its own, named ``application_name`` (operators and the
    tests find it in ``pg_stat_activity``): ``DATABASE_DIRECT_URL``'s database when set, else
    Django's. HOST may be a socket directory (the embedded server's); libpq takes it as is."""
    db = getattr(settings, "DATABASE_DIRECT", None) or django_connection.settings_dict
    options = {k: v for k, v in (db.get("OPTIONS") or {}).items() if k not in _DJANGO_ONLY_OPTIONS}
    kwargs: dict[str, Any] = {
        **options,
        "dbname": db.get("NAME"),
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": str(db["PORT"]) if db.get("PORT") else None,
        "application_name": application_name,
        "connect_timeout": 5,
    }
    if kwargs["host"] and not str(kwargs["host"]).startswith("/"):
        # TCP: notice a peer that vanished without a FIN within about a minute.
        kwargs.update(keepalives=1, keepalives_idle=30, keepalives_interval=10, keepalives_count=3)
    return {k: v for k, v in kwargs.items() if v is not None}


class _Local(threading.local):
    def __init__(self) -> None:
        self.conn: psycopg.Connection[Any] | None = None


_local = _Local()


def _lock_connection(fresh: bool = False) -> psycopg.Connection[Any]:
    conn = _local.conn
    if fresh or conn is None or conn.closed:
        _drop()
        conn = _local.conn = psycopg.connect(autocommit=True, **params(LOCKS_APPLICATION_NAME))
    return conn


def _drop() -> None:
    conn, _local.conn = _local.conn, None
    if conn is not None:
        with suppress(Exception):
            conn.close()


def _try_direct(key: int) -> bool:
    # A connection idle since the last pass may have died with a database restart: one new
    # connection is tried before giving up (a lock on a dead session is no lock, so nothing is
    # held twice).
    for fresh in (False, True):
        try:
            row = _lock_connection(fresh).execute(_TRY_LOCK, [key]).fetchone()
            return bool(row and row[0])
        except psycopg.OperationalError as exc:
            _drop()
            if fresh:
                raise OperationalError(f"advisory lock {key:#x}: {exc}") from exc
        except psycopg.Error as exc:
            _drop()
            raise OperationalError(f"advisory lock {key:#x}: {exc}") from exc
    return False  # not reached


def _unlock_direct(key: int) -> None:
    conn = _local.conn
    if conn is None:
        return  # the session went, and its lock with it
    try:
        conn.execute(_UNLOCK, [key])
    except psycopg.Error:
        logger.warning("could not release advisory lock %#x; closing its connection", key)
        _drop()


def _try_django(key: int) -> bool:
    with django_connection.cursor() as cur:
        cur.execute(_TRY_LOCK, [key])
        row = cur.fetchone()
    return bool(row and row[0])


def _unlock_django(key: int) -> None:
    try:
        with django_connection.cursor() as cur:
            cur.execute(_UNLOCK, [key])
    except DatabaseError:
        # A broken connection cannot send the release; closing it releases the lock instead.
        logger.warning("could not release advisory lock %#x; closing the connection", key)
        django_connection.close()


@contextmanager
def advisory_lock(key: int) -> Iterator[bool]:
    """Try the session-level advisory lock ``key`` and yield whether this process holds it; a
    lock taken is released when the block ends, however it ends.

    The block's own statements run wherever they run (Django's connection, in autocommit for a
    sweeper: each commits as it returns); only the lock needs its session to last the block.
    Raises ``django.db.OperationalError`` when the lock's session cannot be had.
    """
    direct = pooled()
    taken = _try_direct(key) if direct else _try_django(key)
    try:
        yield taken
    finally:
        if taken:
            (_unlock_direct if direct else _unlock_django)(key)


def close() -> None:
    """Close this thread's lock connection, if any (its locks go with it)."""
    _drop()
