"""Run the sweeps in a loop: reap, requeue due retries, and (every ten minutes) retention.

SIGTERM and SIGINT finish the pass in progress and exit. Several copies may run at once: each
sweep takes an advisory lock per pass and locks its rows SKIP LOCKED, so none double-acts.
"""

from __future__ import annotations

import argparse
import signal
from datetime import UTC, datetime
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from todos import sweeps

# A zero, negative or NaN interval ran the passes back to back, thousands of transactions a
# second. Below the setting's one-second floor (switchboard/settings.py) for tests and demos
# that want a deadline or a reap seen at once.
INTERVAL_MIN_SECONDS = 0.1
INTERVAL_MAX_SECONDS = 3600.0


def _interval(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not INTERVAL_MIN_SECONDS <= value <= INTERVAL_MAX_SECONDS:  # NaN fails this too
        raise argparse.ArgumentTypeError(
            f"must be from {INTERVAL_MIN_SECONDS:g} to {INTERVAL_MAX_SECONDS:g} seconds"
        )
    return value


class Command(BaseCommand):
    help = "Run the sweeper loop (reap, requeue_retries, ring_unclaimed, retention) until SIGTERM."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--interval",
            type=_interval,
            default=float(settings.SWITCHBOARD_SWEEP_INTERVAL_SECONDS),
            help="Seconds between passes (default: SWITCHBOARD_SWEEP_INTERVAL_SECONDS).",
        )
        parser.add_argument("--once", action="store_true", help="Run one pass and exit.")

    def handle(self, *args: Any, **options: Any) -> None:
        def emit(line: str) -> None:
            self.stdout.write(f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ} {line}")
            self.stdout.flush()

        sweeper = sweeps.Sweeper(options["interval"], emit=emit)
        if options["once"]:
            report = sweeper.tick()
            if report is not None and not report.lines():
                emit("sweeper: nothing to do")
            return

        def on_signal(signum: int, frame: FrameType | None) -> None:
            emit(f"sweeper: {signal.Signals(signum).name}, finishing the pass and stopping")
            sweeper.stop()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        emit(f"sweeper: running every {options['interval']:g}s")
        sweeper.run()
        emit("sweeper: stopped")
