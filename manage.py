#!/usr/bin/env python
"""Django's command-line utility for administrative tasks.

With ``DATABASE_URL`` unset, the embedded PostgreSQL is started (or the running one attached)
here, before the command runs, for every command that may touch the database; the few that never
do start nothing (``NO_DATABASE``), so ``manage.py check`` on a fresh checkout stays inert.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

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


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")
    from django.core.management import execute_from_command_line

    if needs_database(sys.argv[1:]):
        from switchboard import embedded

        embedded.ensure_running()
    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
