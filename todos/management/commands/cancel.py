"""Cancel a todo from the shell, as the Board's cancel does; its holder, if any, learns it at
its next heartbeat or report (the error code ``canceled``, with the reason and who).

``manage.py cancel td_… --reason "superseded by #43"`` is ``manage.py todos cancel`` under its
older name: one implementation (``todos/management/operate.py``), the same answers and exit
codes. With ``--as USERNAME`` the cancel is that operator's, in their scope: a todo of an
endpoint they do not own is "not found", as on the Board. Without it, the system's
(``manage.py``), in the scope of the todo's owner.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from todos.management import operate


class Command(BaseCommand):
    help = "Cancel an unfinished todo; its holder's next call answers canceled (= todos cancel)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("todo_id", help="The todo's id (td_…).")
        parser.add_argument("--reason", required=True, help="Why: the holder is told this.")
        parser.add_argument(
            "--as",
            dest="as_user",
            metavar="USERNAME",
            help="Cancel as this operator, in their scope; default: the system (manage.py).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        line = operate.cancel(options["todo_id"], options["reason"], options["as_user"])
        self.stdout.write(line)
