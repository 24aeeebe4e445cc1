"""Named SQL statements: loaded once at import, run with named parameters.

A statement lives in ``<app>/sql/<name>.sql`` and opens with ``-- <name>: purpose``, ``-- params:``,
``-- returns:`` and ``-- Uses index:`` lines. ``@{fragment}`` marks where a shared fragment is
spliced in, at load time, never per call: fragments come from ``<app>/sql/_<fragment>.sql`` or
from the caller (the owner-scope predicates of ``switchboard.scope``). A missing file or an
unfilled marker fails at import, so a typo stops start-up instead of a request. Whole-line
``--`` comments are dropped at load; they are for readers, not for the server.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import psycopg
from django.db import connection
from psycopg import pq
from psycopg.rows import dict_row

_MARKER = re.compile(r"@\{(\w+)\}")
_TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid
# psycopg's default text loader for timestamptz: the C one where psycopg's binary package is
# installed (pyproject's psycopg[binary]), which returns the time in the session's time zone.
_TIMESTAMPTZ_LOADER = psycopg.adapters.get_loader(_TIMESTAMPTZ_OID, pq.Format.TEXT)


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


def fetch_all(sql: str, params: Mapping[str, Any] | Sequence[Any]) -> list[dict[str, Any]]:
    """Run ``sql`` on Django's connection and return its rows as dicts.

    psycopg builds the dicts (``dict_row`` reads the column names once per result); reading
    ``cursor.description`` instead builds a Column object per column on every read, a tenth of
    a lifecycle call's Python time (docs/performance.md). A statement that returns no rows
    (no RETURNING) gives ``[]``.
    """
    with connection.cursor() as cur:
        # Django's wrapper around a psycopg cursor of its own: row factory and loaders are this
        # cursor's, nothing else sees them.
        raw = cur.cursor
        raw.row_factory = dict_row
        if cur.db.timezone is dt.UTC and raw.connection.info.timezone is dt.UTC:
            # Django loads timestamptz with a pure-Python loader that reads the value in the
            # session's time zone and then sets its tzinfo to Django's (UTC). With both UTC,
            # psycopg's own loader (compiled) gives the same datetimes, tzinfo UTC, at a fraction
            # of the cost: eight timestamps a claim + complete (docs/performance.md).
            raw.adapters.register_loader(_TIMESTAMPTZ_OID, _TIMESTAMPTZ_LOADER)
        cur.execute(sql, params)
        result = raw.pgresult
        if result is None or result.status != pq.ExecStatus.TUPLES_OK:
            return []
        rows: list[dict[str, Any]] = cur.fetchall()
        return rows


def fetch_one(sql: str, params: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any] | None:
    rows = fetch_all(sql, params)
    return rows[0] if rows else None
