"""Print a lifecycle statement exactly as it runs, its fragments spliced in.

``manage.py sql claim_next`` prints the statement ``lifecycle.claim_next`` sends for one queue;
``manage.py sql cancel_by_human`` the Board's cancel; ``--list`` names them all. The names are
the statements' constants in lower case (``todos/lifecycle/statements.py``, the push outbox's in
``todos/push.py``); ``ring_due_<scan>`` is each of ring_due's scans, ``bulk_retry`` and
``bulk_cancel`` a bulk action with no filter (a filter puts its predicate where ``TRUE`` is).
Reads no database: what it prints is what the process loads at import.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from todos import push
from todos.lifecycle import statements


def named() -> dict[str, str]:
    """Every statement the lifecycle and the push outbox run, by name."""
    return dict(sorted({**statements.named(), **push.STATEMENTS}.items()))


class Command(BaseCommand):
    help = "Print a lifecycle statement as it runs (fragments spliced); --list names them."
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", nargs="?", help="The statement, e.g. claim_next.")
        parser.add_argument("--list", action="store_true", help="List the statements' names.")

    def handle(self, *args: Any, **options: Any) -> None:
        found = named()
        if options["list"]:
            self.stdout.write("\n".join(found))
            return
        name = options["name"]
        if not name:
            raise CommandError("name a statement (manage.py sql --list names them)")
        if name not in found:
            raise CommandError(f"no statement named {name!r} (manage.py sql --list names them)")
        self.stdout.write(found[name])
