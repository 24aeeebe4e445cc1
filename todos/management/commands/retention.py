"""Apply retention once: delete finished todos past retention and events no todo references."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from switchboard import runtime_settings
from todos import retention


class Command(BaseCommand):
    help = (
        "Delete finished todos older than retention_days or beyond retention_max_terminal per"
        " endpoint (with their attempts), and unreferenced events older than retention_days."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would be deleted; delete nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        current = runtime_settings.current()
        result = retention.run(dry_run=options["dry_run"])
        verb = "would delete" if result.dry_run else "deleted"
        self.stdout.write(
            f"retention: {verb} {result.todos} todos ({result.activity} activity rows with"
            f" them) and {result.events} events"
            f" (retention_days={current.retention_days},"
            f" retention_max_terminal={current.retention_max_terminal})"
        )
