"""The Django internals ``switchboard.lib.sql.fetch_all`` relies on are still there and still mean
what it assumes (docs/decisions/0002-kept-cursor.md).

``fetch_all`` keeps a psycopg cursor on Django's connection and repeats by hand the guards of
Django's own cursor path, reading members of ``BaseDatabaseWrapper`` that are not public API. A
Django upgrade that renames one, changes what it means, or adds a guard to the cursor path must
fail here, loudly, rather than leave the lifecycle quietly outside Django's checks.
"""

from __future__ import annotations

import ast
import datetime as dt
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from django.db import (
    DEFAULT_DB_ALIAS,
    DataError,
    ProgrammingError,
    connection,
    connections,
    transaction,
)
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.utils import CursorWrapper
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from psycopg import pq

from switchboard.lib import sql
from switchboard.lib.sql import fetch_all, fetch_tuples

RECORD = "docs/decisions/0002-kept-cursor.md"
PREPARED_RECORD = "docs/decisions/0001-prepared-statements.md"
_TIMESTAMPTZ_OID = psycopg.postgres.types["timestamptz"].oid

# Every member of Django's DatabaseWrapper that fetch_all and _cursor read or call.
METHODS = (
    "close_if_health_check_failed",
    "ensure_connection",
    "validate_thread_sharing",
    "validate_no_broken_transaction",
    "cursor",
)
ATTRIBUTES = (
    "queries_logged",
    "execute_wrappers",
    "allow_thread_sharing",
    "wrap_database_errors",
    "connection",
    "timezone",
)


def _calls(function: Callable[..., Any], owner: str) -> set[str]:
    """The attribute names ``function`` reads from ``owner`` (``self`` or ``self.db``)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and ast.unparse(node.value) == owner:
            names.add(node.attr)
    return names


def _changed(what: str) -> str:
    return (
        f"{what}: switchboard/lib/sql.py's fetch_all repeats Django's cursor path by hand and "
        f"must follow it; see {RECORD}"
    )


def test_the_database_wrapper_still_has_every_member_fetch_all_uses() -> None:
    db = connections[DEFAULT_DB_ALIAS]  # what fetch_all reads, not the proxy
    missing = [name for name in (*METHODS, *ATTRIBUTES) if not hasattr(db, name)]
    assert not missing, _changed(f"DatabaseWrapper no longer has {missing}")
    not_callable = [name for name in METHODS if not callable(getattr(db, name))]
    assert not not_callable, _changed(f"no longer methods: {not_callable}")
    # The kept cursor's slot on the wrapper must stay ours.
    assert not hasattr(BaseDatabaseWrapper, "_switchboard_cursor"), _changed(
        "Django now defines _switchboard_cursor itself"
    )


def test_djangos_cursor_path_runs_exactly_the_guards_fetch_all_repeats() -> None:
    backend = type(connections[DEFAULT_DB_ALIAS])
    assert backend._cursor is BaseDatabaseWrapper._cursor, _changed(
        f"{backend.__module__} now overrides _cursor"
    )
    assert _calls(BaseDatabaseWrapper._cursor, "self") == {
        "close_if_health_check_failed",
        "ensure_connection",
        "wrap_database_errors",
        "_prepare_cursor",
        "create_cursor",
    }, _changed("BaseDatabaseWrapper._cursor changed")
    assert _calls(BaseDatabaseWrapper._prepare_cursor, "self") == {
        "validate_thread_sharing",
        "queries_logged",
        "make_debug_cursor",
        "make_cursor",
    }, _changed("BaseDatabaseWrapper._prepare_cursor changed")
    assert _calls(CursorWrapper._execute_with_wrappers, "self.db") == {"execute_wrappers"}, (
        _changed("CursorWrapper._execute_with_wrappers changed")
    )
    assert _calls(CursorWrapper._execute, "self.db") == {
        "validate_no_broken_transaction",
        "wrap_database_errors",
    }, _changed("CursorWrapper._execute changed")


def test_captured_queries_see_the_lifecycles_statements(db: None) -> None:
    assert connection.queries_logged is False, _changed("queries_logged is on outside capture")
    with CaptureQueriesContext(connection) as captured:
        assert connection.queries_logged is True, _changed("capture no longer sets it")
        fetch_all("SELECT 1 AS one", {})
    assert [q["sql"] for q in captured.captured_queries] == ["SELECT 1 AS one"], _changed(
        "a captured fetch_all was not recorded"
    )


def test_an_execute_wrapper_sees_the_lifecycles_statements(db: None) -> None:
    seen: list[str] = []

    def spy(execute: Callable[..., Any], sql_text: str, *args: Any) -> Any:
        seen.append(sql_text)
        return execute(sql_text, *args)

    assert connection.execute_wrappers == [], _changed("execute_wrappers is not an empty list")
    with connection.execute_wrapper(spy):
        assert connection.execute_wrappers == [spy], _changed("execute_wrapper no longer lists it")
        fetch_all("SELECT 2 AS two", {})
    assert seen == ["SELECT 2 AS two"], _changed("an execute wrapper did not see fetch_all")


def test_thread_sharing_is_off_until_a_caller_turns_it_on(db: None) -> None:
    assert connection.allow_thread_sharing is False, _changed("allow_thread_sharing default")
    connection.inc_thread_sharing()
    try:
        assert connection.allow_thread_sharing is True, _changed("inc_thread_sharing")
    finally:
        connection.dec_thread_sharing()


def test_a_statement_in_a_broken_atomic_block_is_refused(db: None) -> None:
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError):
            fetch_all("SELECT 1 AS one", {})


def test_database_errors_come_out_as_djangos(db: None) -> None:
    # The savepoint rolls back on the way out, so the test's transaction stays usable.
    with pytest.raises(DataError) as raised, transaction.atomic():
        fetch_all("SELECT 1 / 0 AS never", {})
    assert isinstance(raised.value.__cause__, psycopg.errors.DivisionByZero), _changed(
        "wrap_database_errors no longer maps psycopg's errors"
    )


def test_the_kept_cursor_is_a_server_binding_cursor_with_the_compiled_loader(
    db: None,
) -> None:
    fetch_all("SELECT 1 AS one", {})
    cur = connection._switchboard_cursor  # type: ignore[attr-defined]
    assert cur.connection is connection.connection, _changed("the kept cursor's connection")
    # Server-side binding (prepared statements), with the statement's placeholders numbered once.
    assert isinstance(cur, psycopg.RawCursor), f"the kept cursor is a {type(cur)}; see {RECORD}"
    assert not isinstance(cur, psycopg.ClientCursor), (
        f"the kept cursor binds on the client: prepared statements are off; see {PREPARED_RECORD}"
    )
    assert connection.connection.prepare_threshold == 5, (
        f"psycopg does not prepare after five executions; see {PREPARED_RECORD}"
    )
    # fetch_all takes its shortcut only when both zones are the very dt.UTC object.
    assert connection.timezone is dt.UTC, _changed(f"Django's timezone is {connection.timezone!r}")
    loader = cur.adapters.get_loader(_TIMESTAMPTZ_OID, pq.Format.TEXT)
    assert loader is sql._TIMESTAMPTZ_LOADER, _changed("the compiled timestamptz loader is off")
    fetch_all("SELECT 2 AS two", {})
    assert connection._switchboard_cursor is cur  # type: ignore[attr-defined]


def test_a_new_connection_gets_a_new_kept_cursor(transactional_db: None) -> None:
    fetch_all("SELECT 1 AS one", {})
    before = connection._switchboard_cursor  # type: ignore[attr-defined]
    connection.close()
    assert connection.connection is None, _changed("close() no longer drops .connection")

    assert fetch_all("SELECT 1 AS one", {}) == [{"one": 1}]
    after = connection._switchboard_cursor  # type: ignore[attr-defined]
    assert after is not before and after.connection is connection.connection, _changed(
        "a reconnect did not replace DatabaseWrapper.connection"
    )


def test_fetch_tuples_reads_rows_as_tuples_and_leaves_the_kept_cursor_on_dicts(
    db: None,
) -> None:
    statement = "SELECT 1 AS one, 'two' AS two UNION ALL SELECT 3, 'four'"
    assert fetch_tuples(statement, {}) == [(1, "two"), (3, "four")]
    assert fetch_all(statement, {}) == [{"one": 1, "two": "two"}, {"one": 3, "two": "four"}]
    # Through Django's own cursor too (captured queries), where fetch_all goes then.
    with CaptureQueriesContext(connection) as captured:
        assert fetch_tuples(statement, {}) == [(1, "two"), (3, "four")]
        assert fetch_all(statement, {})[0] == {"one": 1, "two": "two"}
    assert len(captured.captured_queries) == 2


def test_a_failed_fetch_tuples_leaves_the_kept_cursor_on_dicts(db: None) -> None:
    with pytest.raises(DataError), transaction.atomic():
        fetch_tuples("SELECT 1 / 0 AS boom", {})
    assert fetch_all("SELECT 1 AS one", {}) == [{"one": 1}]


# --- placeholders, numbered once a statement ------------------------------------------------


def test_named_placeholders_are_numbered_once_each_name_in_order_of_first_use() -> None:
    text, order = sql.numbered("SELECT %(b)s, %(a)s, %(b)s WHERE x LIKE 'a%%'")
    assert text == "SELECT $1, $2, $1 WHERE x LIKE 'a%'"
    assert order == ("b", "a")
    assert sql.positional("SELECT %(b)s, %(a)s", {"a": 1, "b": 2, "unused": 3}) == (
        "SELECT $1, $2",
        [2, 1],
    )


def test_positional_placeholders_are_numbered_in_turn() -> None:
    assert sql.positional("SELECT %s, %s", [1, "x"]) == ("SELECT $1, $2", [1, "x"])
    assert sql.positional("SELECT 1", {}) == ("SELECT 1", [])


@pytest.mark.parametrize(
    ("statement", "params", "message"),
    [
        ("SELECT %(a)s", {}, "query parameter missing: a"),
        ("SELECT %(a)s", [1], "named placeholders need a mapping"),
        ("SELECT %s, %s", [1], "2 placeholders but 1 parameters"),
        ("SELECT %s", {"a": 1}, "1 placeholders"),
        ("SELECT %(a)s, %s", {"a": 1}, "named and positional"),
        ("SELECT %(a)b", {"a": b"x"}, "only %s placeholders"),
    ],
)
def test_a_statement_and_parameters_that_do_not_match_are_refused_as_djangos_error(
    db: None, statement: str, params: Any, message: str
) -> None:
    with pytest.raises(ProgrammingError, match=message), transaction.atomic():
        fetch_all(statement, params)


def test_a_statement_longer_than_psycopgs_cache_reads_as_through_djangos_cursor(db: None) -> None:
    # psycopg converts a statement over 4 KiB anew on every execute; the kept cursor takes it
    # numbered once. The rows are the same as Django's cursor's, every time (prepared after 5).
    padding = " ".join(f"%(p{i % 7})s AS c{i}," for i in range(300))
    statement = f"SELECT {padding} %(last)s::text AS last, '100%%' AS pct"
    assert len(statement.encode()) > 4096
    params = {**{f"p{i}": i for i in range(7)}, "last": "end"}
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        columns = [c.name for c in cursor.description]
        expected = dict(zip(columns, cursor.fetchone(), strict=True))
    for _ in range(7):
        assert fetch_all(statement, params) == [expected]
    assert expected["pct"] == "100%" and expected["c8"] == 1
