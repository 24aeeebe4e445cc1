"""Timing a Django page or read in the bench process: the calls after a warm-up, in milliseconds,
and their 95th percentile. Shared by bench/activity.py and bench/overview.py."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

WARMUP_REQUESTS = 5  # past psycopg's prepare threshold (5) before the clock starts


def timed(call: Callable[[], object], n: int) -> list[float]:
    """Milliseconds per call, ``n`` calls after a warm-up."""
    for _ in range(WARMUP_REQUESTS):
        call()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def p95(samples: Sequence[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
