"""Cancel a todo from the shell, as the Board's cancel does; its holder, if any, learns it at
its next heartbeat or report (the error code ``canceled``, with the reason and who).

``manage.py cancel td_… --reason "superseded by #43"``. With ``--as USERNAME`` the cancel is
that operator's, in their scope: a todo of an endpoint they do not own is "not found", as on
the Board. Without it, the system's (``manage.py``), in the scope of the todo's owner: whoever
runs manage.py on the server already has the database. Prints what it changed; a refusal is one
line and exit 1.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from switchboard.models import Human
from switchboard.scope import Scope, acting_human
from todos import lifecycle
from todos.models import Todo


class Command(BaseCommand):
    help = "Cancel an unfinished todo; its holder's next call answers canceled."

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
        todo_id = options["todo_id"]
        if options["as_user"] is not None:
            human = Human.objects.filter(username=options["as_user"]).first()
            if human is None:
                raise CommandError(f"no operator named {options['as_user']!r}")
            scope, by_system = Scope.of_human(human.id), False
        else:
            owner = (
                Todo.objects.filter(pk=todo_id)
                .values_list("endpoint__owner_id", "endpoint__team_id")
                .first()
            )
            human_id = acting_human(*owner) if owner is not None else None
            if human_id is None:
                raise CommandError(f"{todo_id}: not found")
            scope, by_system = Scope.of_human(human_id), True
        try:
            done = lifecycle.cancel(scope, todo_id, reason=options["reason"], by_system=by_system)
        except TodoNotFound:
            raise CommandError(f"{todo_id}: not found") from None
        except LeaseConflict:
            raise CommandError(f"{todo_id}: already finished, nothing to cancel") from None
        except InvalidInput as exc:
            raise CommandError(f"refused: {exc}") from None
        held = " (its holder is told at its next call)" if done.attempt_seq is not None else ""
        self.stdout.write(f"Canceled {todo_id}{held}.")
