"""``manage.py reprice --since DATE``: price every model call started since DATE (UTC, a date
or an ISO 8601 instant) again with the price table as it stands, and rebuild the cost rollups
(otlp/reprice.py). Prints what it changed."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from otlp.reprice import reprice


def _since(text: str) -> dt.datetime:
    try:
        if len(text) == 10:
            return dt.datetime.combine(dt.date.fromisoformat(text), dt.time(), dt.UTC)
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise CommandError("--since: a date (YYYY-MM-DD) or an ISO 8601 instant") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


class Command(BaseCommand):
    help = "Recompute span costs and the cost rollups since a date, after a price change."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--since", required=True, help="YYYY-MM-DD (UTC) or an instant.")

    def handle(self, *args: Any, **options: Any) -> None:
        done = reprice(_since(options["since"]))
        self.stdout.write(
            f"Repriced {done.spans} model calls ({done.changed} changed, {done.unpriced}"
            f" unpriced); rebuilt {done.todos} todos, {done.attempts} attempts,"
            f" {done.hours} hours."
        )
