"""Named SQL statements: loaded once at import, run with named parameters.

A statement lives in ``<app>/sql/<name>.sql`` and opens with ``-- <name>: purpose``, ``-- params:``,
``-- returns:`` and ``-- Uses index:`` lines. ``@{fragment}`` marks where a shared fragment is
spliced in, at load time, never per call: fragments come from ``<app>/sql/_<fragment>.sql`` or
from the caller (the owner-scope predicates of ``switchboard.scope``). A missing file or an
unfilled marker fails at import, so a typo stops start-up instead of a request. Whole-line
``--`` comments are dropped at load; they are for readers, not for the server.

A statement that changes what the change feed's consumers show returns its announcements in a
column named ``notified`` (a ``todo_changed`` payload per row, or an array of them:
``todos/sql/_notify.sql``). ``fetch_all`` announces them once the statement's transaction has
committed: at once in autocommit, on commit inside an atomic block, never after a rollback
(``switchboard/lib/changefeed.py``, docs/decisions/0033-announce-after-commit.md). So no caller
can forget to, and none announces a change that did not commit.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.asyncio import async_unsafe
from psycopg import pq
from psycopg.abc import Loader
from psycopg.rows import RowFactory, dict_row, tuple_row

from switchboard.lib import changefeed

_MARKER = re.compile(r"@\{(\w+)\}")
# The column that carries a statement's announcements (see the module's docstring).
NOTIFIED = "notified"
# A second announcement column some statements return beside ``notified``: the queue-wide ring of
# a freed max_in_flight slot (todos/sql/_slot_freed.sql).
FREED = "freed"
_ANNOUNCED = (NOTIFIED, FREED)
_TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid


def _psycopg_loader(oid: int) -> type[Loader]:
    loader = psycopg.adapters.get_loader(oid, pq.Format.TEXT)
    if loader is None:  # psycopg has one for every builtin type; fail at import if not
        raise ImportError(f"psycopg has no text loader for type {oid}")
    return loader


# psycopg's default text loader for timestamptz: the C one where psycopg's binary package is
# installed (pyproject's psycopg[binary]), which returns the time in the session's time zone.
_TIMESTAMPTZ_LOADER = _psycopg_loader(_TIMESTAMPTZ_OID)


def load(directory: Path, name: str, **fragments: str) -> str:
    """Return the text of ``directory/name.sql`` with its ``@{…}`` markers filled."""
    # Whole-line comments document the file; they are not sent (and may use '%' freely).
    lines = (directory / f"{name}.sql").read_text().splitlines()
    text = "\n".join(line for line in lines if not line.lstrip().startswith("--")).strip()

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in fragments:
            return fragments[key]
        path = directory / f"_{key}.sql"
        if path.exists():
            # Fragments may hold markers of their own (the claim tail names the guard).
            return load(directory, f"_{key}", **fragments)
        raise LookupError(f"{directory / name}.sql: no fragment for @{{{key}}}")

    # Repeat until stable: a spliced fragment may contain further markers.
    previous = None
    while previous != text:
        previous, text = text, _MARKER.sub(fill, text)
    return text


@async_unsafe
def fetch_all(sql: str, params: Mapping[str, Any] | Sequence[Any]) -> list[dict[str, Any]]:
    """Run ``sql`` on Django's connection and return its rows as dicts (``[]`` when the
    statement returns no rows).

    This is the lifecycle's hot path, so it runs on a psycopg cursor kept for the life of
    Django's connection rather than a new ``connection.cursor()`` per call: creating a cursor
    through Django, its wrapper, and the adapters it needs cost more client time than the
    statement itself (docs/decisions/0002-kept-cursor.md). Everything Django's cursor
    path guarantees still holds: the health check and the connection are Django's, a statement
    in a broken atomic block is refused, errors come out as ``django.db`` exceptions and mark
    the connection, and it joins the caller's transaction. When Django records queries
    (``DEBUG``, ``CaptureQueriesContext``) or an execute wrapper is installed, the statement
    goes through Django's own cursor instead, so they see it; so it does when the connection is
    shared between threads (a kept cursor must not be).
    """
    rows = _fetch(sql, params, dict_row)
    if rows and (NOTIFIED in rows[0] or FREED in rows[0]):
        _announce(rows)
    return rows


def _announce(rows: list[dict[str, Any]]) -> None:
    """Announce the ``notified`` (and ``freed``) payloads of ``rows`` once their transaction
    commits; identical payloads once (a bulk statement frees one queue's slots many times)."""
    if len(rows) == 1:
        # One todo's transition, the hot path: its one payload, nothing to deduplicate.
        row = rows[0]
        notified = row.get(NOTIFIED)
        if isinstance(notified, str) and not row.get(FREED):
            if notified:  # '' is a pg_notify's void, made in the statement
                after_commit(changefeed.announce, (notified,))
            return
    payloads: list[str] = []
    for row in rows:
        for column in _ANNOUNCED:
            value = row.get(column)
            if not value:  # NULL, an empty array, or '' (a pg_notify's void, made in the statement)
                continue
            if isinstance(value, str):
                payloads.append(value)
            else:
                payloads.extend(value)
    if payloads:
        after_commit(changefeed.announce, tuple(dict.fromkeys(payloads)))


def after_commit(func: Callable[..., object], /, *args: Any) -> None:
    """Call ``func(*args)`` once the default connection's work has committed: at once in
    autocommit (the statement before it has committed), at the commit of the enclosing atomic
    block, never after its rollback. Django's ``transaction.on_commit`` without the callback it
    would build and look up on every call: the hot path's transitions count and announce
    through this twice a cycle."""
    db = connections[DEFAULT_DB_ALIAS]
    if db.in_atomic_block:
        db.on_commit(functools.partial(func, *args))
    else:
        func(*args)


@async_unsafe
def fetch_tuples(sql: str, params: Mapping[str, Any] | Sequence[Any]) -> list[tuple[Any, ...]]:
    """``fetch_all`` with each row as a tuple, in the statement's column order: for a read of
    thousands of rows (the trail page's spans), where a dict a row costs more than the read."""
    return _fetch(sql, params, tuple_row)


def _fetch(sql: str, params: Mapping[str, Any] | Sequence[Any], rows: RowFactory[Any]) -> Any:
    db = connections[DEFAULT_DB_ALIAS]
    if db.queries_logged or db.execute_wrappers or db.allow_thread_sharing:
        return _fetch_all_wrapped(db, sql, params, rows)
    db.close_if_health_check_failed()
    db.ensure_connection()
    db.validate_thread_sharing()
    db.validate_no_broken_transaction()
    with db.wrap_database_errors:
        query, args = positional(sql, params)
        cur = _cursor(db)
        if rows is dict_row:
            cur.execute(query, args)
            return _rows(cur)
        cur.row_factory = rows
        try:
            cur.execute(query, args)
            return _rows(cur)
        finally:
            cur.row_factory = dict_row  # the kept cursor's own


# psycopg's placeholders: %(name)s, %s, and %% for a literal percent sign (%b, %t unused here).
_PLACEHOLDER = re.compile(r"%(?:\(([^)]+)\))?(.)", re.DOTALL)


@functools.lru_cache(maxsize=512)
def numbered(sql: str) -> tuple[str, tuple[str, ...] | int]:
    """``sql`` with its placeholders numbered as PostgreSQL's ($1, $2, …; a name used twice is
    one number), and the names in number order, or how many positional ones there are.

    psycopg does the same for every execute, and caches it only for statements under 4 KiB:
    the claim is 7 (11 over several queues), and parsing it again cost 66 µs a claim. Here it is
    done once a statement text; the kept cursor is psycopg's ``RawCursor``, which sends the
    text as it is (docs/decisions/0002-kept-cursor.md)."""
    names: dict[str, int] = {}
    positional = 0

    def number(match: re.Match[str]) -> str:
        nonlocal positional
        name, kind = match.group(1), match.group(2)
        if kind == "%" and name is None:
            return "%"
        if kind != "s":
            raise psycopg.ProgrammingError(f"only %s placeholders are supported, not %{kind}")
        if name is None:
            positional += 1
            return f"${positional}"
        return f"${names.setdefault(name, len(names) + 1)}"

    text = _PLACEHOLDER.sub(number, sql)
    if names and positional:
        raise psycopg.ProgrammingError("named and positional placeholders in one statement")
    return text, (tuple(names) if names else positional)


def positional(sql: str, params: Mapping[str, Any] | Sequence[Any]) -> tuple[str, list[Any]]:
    """The statement and its parameters as ``RawCursor`` takes them: what psycopg's own
    conversion would send, missing parameters refused as psycopg refuses them."""
    text, order = numbered(sql)
    if not order:
        return text, []
    if isinstance(order, tuple):
        if not isinstance(params, Mapping):
            raise psycopg.ProgrammingError("named placeholders need a mapping of parameters")
        try:
            return text, [params[name] for name in order]
        except KeyError as exc:
            raise psycopg.ProgrammingError(f"query parameter missing: {exc.args[0]}") from None
    if isinstance(params, Mapping) or len(params) != order:
        raise psycopg.ProgrammingError(
            f"the query has {order} placeholders but {len(params)} parameters were passed"
        )
    return text, list(params)


def _cursor(db: BaseDatabaseWrapper) -> psycopg.RawCursor[Any]:
    """The psycopg cursor kept on ``db`` for its current connection, made on first use."""
    cur: psycopg.RawCursor[Any] | None = getattr(db, "_switchboard_cursor", None)
    if cur is None or cur.closed or cur.connection is not db.connection:
        # Server-side binding, as Django's cursor with the settings' OPTIONS (prepared after
        # the threshold); numbered placeholders (numbered).
        cur = psycopg.RawCursor(db.connection)
        # psycopg makes the dicts, reading the column names from each result (a cache of them
        # per statement text would go wrong after a migration that changes a table's columns).
        cur.row_factory = dict_row
        if db.timezone is dt.UTC and cur.connection.info.timezone is dt.UTC:
            # Django loads timestamptz with a pure-Python loader that reads the value in the
            # session's time zone and then sets its tzinfo to Django's (UTC). With both UTC,
            # psycopg's own loader (compiled) gives the same datetimes, tzinfo UTC, at a fraction
            # of the cost: eight timestamps a claim + complete. Registered on this cursor only.
            cur.adapters.register_loader(_TIMESTAMPTZ_OID, _TIMESTAMPTZ_LOADER)
        db._switchboard_cursor = cur  # type: ignore[attr-defined]
    return cur


def _rows(cur: psycopg.Cursor[Any]) -> list[Any]:
    result = cur.pgresult
    if result is None or result.status != pq.ExecStatus.TUPLES_OK:
        return []
    return cur.fetchall()


def _fetch_all_wrapped(
    db: BaseDatabaseWrapper,
    sql: str,
    params: Mapping[str, Any] | Sequence[Any],
    rows: RowFactory[Any] = dict_row,
) -> list[Any]:
    """``fetch_all`` through Django's cursor wrapper, for query capture and execute wrappers."""
    with db.cursor() as cur:
        cur.cursor.row_factory = rows
        cur.execute(sql, params)
        return _rows(cur.cursor)


def fetch_one(sql: str, params: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any] | None:
    rows = fetch_all(sql, params)
    return rows[0] if rows else None
