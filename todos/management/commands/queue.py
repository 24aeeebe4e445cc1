"""Pause or resume an endpoint's queue from the shell, as the Board's buttons do.

``manage.py queue pause --endpoint agent-a --queue triage`` (``resume`` the same). With
``--as USERNAME`` the change is recorded as that operator's (who must own the endpoint, as on the
Board); without it, as the system's (``manage.py``): whoever runs manage.py on the server already
has the database, so the command is not a door into another operator's endpoints, and names no
operator it cannot vouch for. Prints what it changed.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard.lib.errors import InvalidInput
from switchboard.models import Endpoint, Human
from todos import lifecycle


class Command(BaseCommand):
    help = "Pause or resume an endpoint's queue: a paused queue gives agents nothing to claim."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("pause", "resume"))
        parser.add_argument("--endpoint", required=True, help="The endpoint's slug.")
        parser.add_argument("--queue", required=True, help="The queue's name.")
        parser.add_argument(
            "--as",
            dest="as_user",
            metavar="USERNAME",
            help="Record the change as this operator's (they must own the endpoint);"
            " default: the system's (manage.py).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        slug, queue = options["endpoint"], options["queue"]
        endpoint = Endpoint.objects.filter(slug=slug).first()
        if endpoint is None:
            raise CommandError(f"no endpoint with slug {slug!r}")
        human_id = None
        if options["as_user"] is not None:
            human = Human.objects.filter(username=options["as_user"]).first()
            if human is None:
                raise CommandError(f"no operator named {options['as_user']!r}")
            human_id = human.id
        change = lifecycle.pause_queue if options["action"] == "pause" else lifecycle.resume_queue
        try:
            done = change(endpoint.id, queue, human_id=human_id)
        except InvalidInput as exc:
            if exc.field == "endpoint":
                raise CommandError(
                    f"{options['as_user']} does not own the endpoint {slug!r}"
                ) from None
            raise CommandError(f"refused: {exc}") from None
        where = f"queue {queue!r} of {slug}"
        if done.changed:
            self.stdout.write(f"{'Paused' if done.paused else 'Resumed'} {where}.")
        else:
            self.stdout.write(
                f"Nothing changed: {where} is {'already' if done.paused else 'not'} paused."
            )
