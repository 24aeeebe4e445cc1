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
from switchboard.models import Human
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
            .only("id", "finished_at", "forgotten_at", "endpoint__owner_id")
        }
        if options["as_user"] is not None:
            human = Human.objects.filter(username=options["as_user"]).first()
            if human is None:
                raise CommandError(f"no operator named {options['as_user']!r}")
            mine = [i for i in ids if i in rows and rows[i].endpoint.owner_id == human.id]
            owners: dict[int, list[str]] = {human.id: mine}
        else:
            owners = {}
            for todo_id in ids:
                if todo_id in rows:
                    owners.setdefault(rows[todo_id].endpoint.owner_id, []).append(todo_id)
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
            if todo is None or not any(todo_id in owned for owned in owners.values()):
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
