"""Ring pending todos that are due a ring, once, and send the push rings that are due."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from todos import sweeps


class Command(BaseCommand):
    help = (
        "Ring pending todos left unclaimed (with backoff, bounded by ring_attempts) or owed a ring"
        " the gate held back; send due push rings; print what changed."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        report = sweeps.PassReport()
        sweeps.rings(report, unclaimed=True)
        for line in report.lines() or ["ring: no todo is due a ring"]:
            self.stdout.write(line)
