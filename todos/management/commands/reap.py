"""Reap lapsed leases once: requeue them, or dead-letter those whose budget is spent."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from todos import sweeps


class Command(BaseCommand):
    help = "Reap claimed todos whose lease lapsed; print what changed."

    def handle(self, *args: Any, **options: Any) -> None:
        report = sweeps.PassReport()
        sweeps.reap_all(report)
        for line in report.lines() or ["reap: nothing to reap"]:
            self.stdout.write(line)
