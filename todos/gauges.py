"""Queue gauges for /metrics: depth and oldest pending age per endpoint and queue.

``switchboard_queue_depth{endpoint,queue}`` is the number of pending todos (waiting to be
claimed) on a live endpoint's queue, ``switchboard_queue_oldest_pending_age_seconds`` the age of
the oldest of them. They come from one grouped read (``todos/sql/queue_depths.sql``) that a
process runs at most once per ``SWITCHBOARD_QUEUE_METRICS_SECONDS``, whatever the scrape rate:
scrapes in between are answered from the last read, with the age counted on to the scrape's
moment. A scrape that finds a read in progress in another thread does not wait for it.

A queue that had pending todos and has none any more reports 0 (and no age) rather than
vanishing, while this process runs. At most ``SERIES_MAX`` queues are reported, the busiest.
A read that fails (the database restarting) keeps the previous values and is retried at the
next due scrape.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import REGISTRY, Collector

from switchboard.lib.sql import fetch_all, load

log = logging.getLogger(__name__)

QUEUE_DEPTHS = load(Path(__file__).parent / "sql", "queue_depths")
SERIES_MAX = 1000

DEPTH = "switchboard_queue_depth"
AGE = "switchboard_queue_oldest_pending_age_seconds"
_LABELS = ["endpoint", "queue"]


def read_depths() -> list[dict[str, Any]]:
    return fetch_all(QUEUE_DEPTHS, {"limit": SERIES_MAX})


class QueueGauges(Collector):
    """A prometheus_client collector serving the queue gauges from a throttled read."""

    def __init__(
        self,
        interval: Callable[[], float],
        read: Callable[[], Iterable[dict[str, Any]]] = read_depths,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._interval = interval
        self._read = read
        self._clock = clock
        self._lock = threading.Lock()
        self._read_at: float | None = None
        # (endpoint, queue) → (depth, oldest pending created_at as epoch seconds, or None)
        self._values: dict[tuple[str, str], tuple[int, float | None]] = {}

    def describe(self) -> Iterator[Metric]:
        # Registration asks for the names; answering here keeps it from reading the database.
        yield GaugeMetricFamily(DEPTH, "", labels=_LABELS)
        yield GaugeMetricFamily(AGE, "", labels=_LABELS)

    def refresh(self, *, force: bool = False) -> bool:
        """Read the depths if the last read is older than the interval (or ``force``); return
        whether this call read them. Never waits for a read running in another thread."""
        now = self._clock()
        if not force and self._read_at is not None and now - self._read_at < self._interval():
            return False
        if not self._lock.acquire(blocking=False):
            return False
        try:
            try:
                rows = list(self._read())
            except Exception:
                log.exception("queue gauges: the depth read failed; keeping the last values")
                self._read_at = now
                return False
            fresh = {
                (r["endpoint"], r["queue"]): (int(r["depth"]), float(r["oldest_epoch"]))
                for r in rows
            }
            gone = {key: (0, None) for key in self._values if key not in fresh}
            self._values = dict(list({**fresh, **gone}.items())[:SERIES_MAX])
            self._read_at = now
            return True
        finally:
            self._lock.release()

    def collect(self) -> Iterator[Metric]:
        self.refresh()
        depth = GaugeMetricFamily(
            DEPTH, "Pending todos (waiting to be claimed) per endpoint and queue.", labels=_LABELS
        )
        age = GaugeMetricFamily(
            AGE,
            "Age of the oldest pending todo per endpoint and queue, in seconds.",
            labels=_LABELS,
        )
        wall = time.time()
        for (endpoint, queue), (n, oldest) in sorted(self._values.items()):
            depth.add_metric([endpoint, queue], n)
            if oldest is not None:
                age.add_metric([endpoint, queue], max(0.0, wall - oldest))
        yield depth
        yield age


_registered: QueueGauges | None = None


def register() -> QueueGauges:
    """Register the queue gauges with the default registry, once per process."""
    global _registered
    if _registered is None:
        _registered = QueueGauges(lambda: float(settings.SWITCHBOARD_QUEUE_METRICS_SECONDS))
        REGISTRY.register(_registered)
    return _registered


# --- usage: switchboard_tokens_total and switchboard_cost_usd_total ------------------------------

USAGE_TOTALS = load(Path(__file__).parent / "sql", "usage_totals")
TOKENS = "switchboard_tokens"
COST = "switchboard_cost_usd"
TOKEN_TYPES = ("input", "output", "cache_read", "cache_write", "reasoning", "unpriced")


def read_usage() -> list[dict[str, Any]]:
    return fetch_all(USAGE_TOTALS, {"limit": SERIES_MAX})


class UsageCounters(Collector):
    """Tokens by type and cost per endpoint and queue, as counters, from the usage rollups
    (``usage_hours``, kept by the OTLP ingest), read as the queue gauges are: at most once per
    interval per process, whatever the scrape rate, never waiting on a read in progress.

    The totals are the database's, so every process serves the same numbers. They only grow,
    except after ``manage.py reprice`` rewrote them (a price changed): Prometheus reads the
    drop as a counter reset. ``type="unpriced"`` counts the tokens of calls no price covers
    (they are in input and output too)."""

    def __init__(
        self,
        interval: Callable[[], float],
        read: Callable[[], Iterable[dict[str, Any]]] = read_usage,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._interval = interval
        self._read = read
        self._clock = clock
        self._lock = threading.Lock()
        self._read_at: float | None = None
        self._rows: list[dict[str, Any]] = []

    def describe(self) -> Iterator[Metric]:
        yield CounterMetricFamily(TOKENS, "", labels=["endpoint", "queue", "type"])
        yield CounterMetricFamily(COST, "", labels=["endpoint", "queue"])

    def refresh(self, *, force: bool = False) -> bool:
        now = self._clock()
        if not force and self._read_at is not None and now - self._read_at < self._interval():
            return False
        if not self._lock.acquire(blocking=False):
            return False
        try:
            try:
                self._rows = list(self._read())
            except Exception:
                log.exception("usage counters: the read failed; keeping the last values")
            self._read_at = now
            return True
        finally:
            self._lock.release()

    def collect(self) -> Iterator[Metric]:
        self.refresh()
        tokens = CounterMetricFamily(
            TOKENS,
            "Tokens of the agents' model calls (from their OTLP spans) per endpoint, queue and"
            " type: input (cache reads and writes included), output (reasoning included),"
            " cache_read, cache_write, reasoning, and unpriced (of calls no price covers).",
            labels=["endpoint", "queue", "type"],
        )
        cost = CounterMetricFamily(
            COST,
            "What the agents' priced model calls cost, in US dollars, per endpoint and queue.",
            labels=["endpoint", "queue"],
        )
        for r in self._rows:
            for kind in TOKEN_TYPES:
                tokens.add_metric([r["endpoint"], r["queue"], kind], float(r[kind]))
            cost.add_metric([r["endpoint"], r["queue"]], float(r["cost_usd"]))
        yield tokens
        yield cost


_usage: UsageCounters | None = None


def register_usage() -> UsageCounters:
    """Register the usage counters with the default registry, once per process."""
    global _usage
    if _usage is None:
        _usage = UsageCounters(lambda: float(settings.SWITCHBOARD_QUEUE_METRICS_SECONDS))
        REGISTRY.register(_usage)
    return _usage
