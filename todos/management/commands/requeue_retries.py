"""Requeue failed todos whose retry is due, once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from todos import sweeps


class Command(BaseCommand):
    help = "Move failed todos whose retry is due back to pending; print what changed."

    def handle(self, *args: Any, **options: Any) -> None:
        report = sweeps.PassReport()
        sweeps.requeue_all(report)
        for line in report.lines() or ["requeue_retries: no retry is due"]:
            self.stdout.write(line)
