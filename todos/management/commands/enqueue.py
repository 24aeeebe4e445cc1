"""Put a todo on an endpoint's queue from the shell; print only its id.

``ID=$(manage.py enqueue --endpoint agent-a --queue triage --title "Look at #42")``.

Time on the todo: ``--priority``, ``--not-before``, ``--start-by``, ``--finish-by`` (each an
ISO 8601 instant with a time zone, or ``+90s``/``+10m``/``+2h``/``+1d`` from now),
``--run-timeout SECONDS``, ``--dedupe-key`` (an unfinished todo of the endpoint with that key is
printed instead, and stderr says so), ``--max-cost-usd 0.50`` (the cap its model calls may
cost: past it the todo is dead-lettered ``budget_exceeded``; default: the queue's). Bad input:
exit 1 with one line naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from switchboard.lib.errors import InvalidInput
from switchboard.lib.text import integer_argument
from switchboard.models import Endpoint
from todos import lifecycle
from todos.limits import parse_instant


class Command(BaseCommand):
    help = "Create a pending todo on an endpoint's queue and print its id."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--endpoint", required=True, help="The endpoint's slug.")
        parser.add_argument("--queue", required=True)
        parser.add_argument("--title", required=True)
        parser.add_argument("--payload", help="A JSON value, e.g. '{\"pr\": 42}' (default {}).")
        parser.add_argument("--work-order", default="", help="Instructions for the agent.")
        parser.add_argument(
            "--max-attempts",
            type=integer_argument,
            default=5,
            help="Claims allowed before dead letter.",
        )
        parser.add_argument(
            "--priority",
            type=integer_argument,
            default=0,
            help="-1000..1000; higher is claimed first.",
        )
        instant = "an ISO 8601 instant with a time zone, or +90s/+10m/+2h/+1d from now"
        parser.add_argument("--not-before", help=f"Not claimable before this: {instant}.")
        parser.add_argument("--start-by", help=f"Dead-lettered if unclaimed at: {instant}.")
        parser.add_argument("--finish-by", help=f"Dead-lettered if unfinished at: {instant}.")
        parser.add_argument(
            "--run-timeout", type=integer_argument, help="Seconds a claim may run (at least 10)."
        )
        parser.add_argument(
            "--dedupe-key", help="At most one unfinished todo per endpoint with this key."
        )
        parser.add_argument(
            "--max-cost-usd",
            help="The most its model calls may cost, in USD (default: the queue's default).",
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
        now = timezone.now()
        try:
            todo = lifecycle.create(
                endpoint.id,
                queue=options["queue"],
                title=options["title"],
                payload=payload,
                work_order=options["work_order"],
                max_attempts=options["max_attempts"],
                priority=options["priority"],
                not_before=parse_instant("not_before", options["not_before"], now),
                start_by=parse_instant("start_by", options["start_by"], now),
                finish_by=parse_instant("finish_by", options["finish_by"], now),
                run_timeout_seconds=options["run_timeout"],
                dedupe_key=options["dedupe_key"],
                max_cost_usd=options["max_cost_usd"],
            )
        except InvalidInput as exc:
            raise CommandError(f"refused: {exc}") from None
        if todo.deduplicated:
            self.stderr.write(f"deduplicated: {todo.id} already holds this dedupe key")
        self.stdout.write(todo.id)
