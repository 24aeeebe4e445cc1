#!/usr/bin/env python
"""Django's command-line utility for administrative tasks.

With ``DATABASE_URL`` unset, the embedded PostgreSQL is started (or the running one attached)
here, before the command runs, for every command that may touch the database; the few that never
do start nothing (``NO_DATABASE``), so ``manage.py check`` on a fresh checkout stays inert.

A command that cannot use the database says so in one line on standard error, with what to set,
and exits 1: when the server running in this checkout (``manage.py serve``) uses a
``DATABASE_URL`` this command was not given, instead of starting a second, empty embedded
database; when the database does not answer; when it has no tables yet. So does an argument
that is not UTF-8 text, and a process setting that cannot be read. ``--traceback`` shows the
whole error instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

# Commands that never connect to the database. makemigrations only tries, to check the history
# of applied migrations, and warns when it cannot; check needs one only with --database.
NO_DATABASE = frozenset(
    {"check", "makemigrations", "help", "version", "diffsettings", "collectstatic", "findstatic"}
)
HELP_OPTIONS = frozenset({"-h", "--help", "--version"})


def needs_database(args: Sequence[str]) -> bool:
    """Tell whether the command line ``args`` (``sys.argv[1:]``) may touch the database."""
    if not args or HELP_OPTIONS.intersection(args):
        return False
    command = args[0]
    if command == "check":
        return any(arg == "--database" or arg.startswith("--database=") for arg in args)
    return command not in NO_DATABASE


def fail(message: str) -> NoReturn:
    sys.stderr.write(f"manage.py: {message}\n")
    raise SystemExit(1)


def find_database() -> None:
    """Attach to the database this checkout's server uses, or stop in one line saying why not."""
    from django.conf import settings

    from switchboard import embedded

    pgdata = settings.EMBEDDED_PGDATA
    if pgdata is not None:
        server = embedded.running_server(Path(settings.DATA_DIR))
        if server is not None and not server.get("embedded"):
            fail(
                f"the server running in this checkout (pid {server['pid']}) uses"
                f" {server['database']}; set DATABASE_URL to that database for this command too"
            )
        if not (Path(pgdata) / "PG_VERSION").exists():
            sys.stderr.write(
                f"manage.py: no database in this checkout yet; starting a new embedded PostgreSQL"
                f" in {pgdata} (set DATABASE_URL to use another server)\n"
            )
    try:
        embedded.ensure_running()
    except RuntimeError as exc:
        fail(f"{first_line(exc)}; set DATABASE_URL to a PostgreSQL server you can reach")


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def database_error(exc: BaseException) -> str | None:
    """One line for an error that says the database cannot serve this command, else None."""
    import psycopg
    from django.conf import settings
    from django.db import utils

    from switchboard import embedded

    where = embedded.safe_url(settings.DATABASE_URL)
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, utils.OperationalError | psycopg.OperationalError):
            hint = (
                "is `make run` (or another command) running? set DATABASE_URL to the server's"
                " database otherwise"
                if settings.EMBEDDED_PGDATA is not None
                else "check DATABASE_URL"
            )
            return f"cannot reach the database {where} ({first_line(seen)}); {hint}"
        if isinstance(seen, psycopg.errors.UndefinedTable):
            return (
                f"the database {where} has no Switchboard tables ({first_line(seen)}): run"
                " `.venv/bin/python manage.py migrate`, or set DATABASE_URL to the server's"
                " database"
            )
        seen = seen.__cause__ or seen.__context__
    return None


def not_utf8(args: Sequence[str]) -> str | None:
    """The first argument that is not UTF-8 text (Python keeps its bytes as surrogates, which
    every later encode refuses), shown as its bytes; None when all are."""
    for arg in args:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return repr(arg.encode("utf-8", "surrogateescape"))
    return None


def load_settings(argv: Sequence[str]) -> None:
    """Read the settings now, so that a process setting that cannot be read (``DEBUG=maybe``,
    an ``EMAIL_URL`` of an unknown scheme) stops in one line naming it, as
    docs/configuration.md says, instead of a traceback from deep in Django's start-up."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        settings.INSTALLED_APPS  # noqa: B018 (the read is the point: it imports the settings)
    except (ImproperlyConfigured, ValueError) as exc:
        if "--traceback" in argv:
            raise
        fail(f"a setting cannot be read: {first_line(exc)}")


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")
    from django.core.management import execute_from_command_line

    argv = sys.argv[1:]
    if (bad := not_utf8(argv)) is not None:
        fail(f"an argument is not UTF-8 text: {bad}")
    load_settings(argv)
    if not needs_database(argv):
        execute_from_command_line(sys.argv)
        return
    find_database()
    try:
        execute_from_command_line(sys.argv)
    except Exception as exc:
        line = None if "--traceback" in argv else database_error(exc)
        if line is None:
            raise
        fail(line)


if __name__ == "__main__":
    main()
