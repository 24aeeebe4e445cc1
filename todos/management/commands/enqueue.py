"""Put a todo on an endpoint's queue from the shell; print only its id.

``ID=$(manage.py enqueue --endpoint agent-a --queue triage --title "Look at #42")``.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard.lib.errors import InvalidInput
from switchboard.models import Endpoint
from todos import lifecycle


class Command(BaseCommand):
    help = "Create a pending todo on an endpoint's queue and print its id."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--endpoint", required=True, help="The endpoint's slug.")
        parser.add_argument("--queue", required=True)
        parser.add_argument("--title", required=True)
        parser.add_argument("--payload", help="A JSON value, e.g. '{\"pr\": 42}' (default {}).")
        parser.add_argument("--work-order", default="", help="Instructions for the agent.")
        parser.add_argument(
            "--max-attempts", type=int, default=5, help="Claims allowed before dead letter."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        payload = None
        if options["payload"] is not None:
            try:
                payload = json.loads(options["payload"])
            except json.JSONDecodeError as exc:
                raise CommandError(f"--payload is not valid JSON: {exc}") from None
        slug = options["endpoint"]
        endpoint = Endpoint.objects.filter(slug=slug).first()
        if endpoint is None:
            raise CommandError(f"no endpoint with slug {slug!r}")
        if endpoint.is_revoked:
            raise CommandError(f"endpoint {slug!r} is revoked; it takes no new todos")
        try:
            todo = lifecycle.create(
                endpoint.id,
                queue=options["queue"],
                title=options["title"],
                payload=payload,
                work_order=options["work_order"],
                max_attempts=options["max_attempts"],
            )
        except InvalidInput as exc:
            raise CommandError(f"refused: {exc}") from None
        self.stdout.write(todo.id)
