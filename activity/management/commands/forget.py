"""Forget todos from the shell, as the Board's Forget does (activity/forget.py): erase what a
finished todo held, leaving a tombstone.

``manage.py forget td_… [td_… …] --as USERNAME``: in that operator's scope, as on the Board (a
todo of an endpoint they do not own is "not found"). Without ``--as``, the system's
(``command:forget``), in the scope of each todo's owner: whoever runs manage.py on the server
already has the database. Prints each id forgotten. Exit 0 when every id was forgotten, 1 when
any was not (unknown or foreign: "not found"; unfinished: cancel it first; already forgotten),
each named on standard error.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from activity import forget
from switchboard.models import Endpoint, Human
from switchboard.scope import acting_human, owned_by
from todos.models import Todo


class Command(BaseCommand):
    help = "Erase what finished todos held (payload, result, notes, spans…), keeping a tombstone."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("todo_ids", nargs="+", metavar="TODO_ID", help="The todos (td_…).")
        parser.add_argument(
            "--as",
            dest="as_user",
            metavar="USERNAME",
            help="Forget as this operator, in their scope; default: the system (manage.py).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        ids: list[str] = list(dict.fromkeys(options["todo_ids"]))
        rows = {
            t.id: t
            for t in Todo.objects.filter(pk__in=ids)
            .select_related("endpoint")
            .only("id", "finished_at", "forgotten_at", "endpoint__owner_id", "endpoint__team_id")
        }
        owners: dict[int, list[str]] = {}
        if options["as_user"] is not None:
            human = Human.objects.filter(username=options["as_user"]).first()
            if human is None:
                raise CommandError(f"no operator named {options['as_user']!r}")
            # Their scope decides (their own endpoints and their teams'): the statement checks it.
            owners[human.id] = [i for i in ids if i in rows]
        else:
            for todo_id in ids:
                if todo_id in rows:
                    endpoint = rows[todo_id].endpoint
                    acting = acting_human(endpoint.owner_id, endpoint.team_id)
                    if acting is not None:
                        owners.setdefault(acting, []).append(todo_id)
        by_system = options["as_user"] is None
        forgotten: set[str] = set()
        for owner_id, owned in owners.items():
            forgotten |= set(forget.forget(owner_id, owned, by_system=by_system))
        failed = 0
        for todo_id in ids:
            if todo_id in forgotten:
                self.stdout.write(f"Forgot {todo_id}.")
                continue
            failed += 1
            todo = rows.get(todo_id)
            if todo is None or not _in_scope(owners, todo_id):
                why = "not found"
            elif todo.forgotten_at is not None:
                why = "already forgotten"
            elif todo.finished_at is None:
                why = "not finished (cancel it first)"
            else:
                why = "changed meanwhile; try again"
            self.stderr.write(f"{todo_id}: {why}")
        if failed:
            raise CommandError(f"{failed} of {len(ids)} not forgotten", returncode=1)


def _in_scope(owners: dict[int, list[str]], todo_id: str) -> bool:
    """Whether the todo is in the scope of the human it was asked of (a foreign one is "not
    found", as on the Board)."""
    for human_id, asked in owners.items():
        if todo_id in asked:
            return Endpoint.objects.filter(owned_by(human_id), todos__id=todo_id).exists()
    return False
