"""Runtime settings: typed defaults in code, overrides in the ``settings`` table (admin edits it).

``current()`` returns a frozen, typed snapshot. It is cached per process for a few seconds, so
the claim path does not read the table on every call; a change made through ``put()`` or the
admin clears this process's cache at once and reaches other processes within the TTL.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

CACHE_TTL_SECONDS = 5.0

logger = logging.getLogger(__name__)


def _setting(default: int, minimum: int, maximum: int, help: str) -> Any:
    return field(default=default, metadata={"min": minimum, "max": maximum, "help": help})


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    attempts_max_per_todo: int = _setting(
        50, 1, 10_000, "Attempt rows kept per todo; older closed attempts are pruned at claim."
    )
    retry_base_seconds: int = _setting(
        30, 1, 86_400, "Backoff after the first failure; doubles per attempt, ±10% jitter."
    )
    retry_max_seconds: int = _setting(3_600, 1, 7 * 86_400, "Longest backoff between retries.")
    lease_ttl_default_seconds: int = _setting(
        300, 10, 86_400, "Lease length when a claim names none."
    )
    retention_days: int = _setting(
        30, 1, 3_650, "Terminal todos older than this are deleted by the retention sweep."
    )
    retention_max_terminal: int = _setting(
        10_000, 1, 10_000_000, "Terminal todos kept per endpoint, newest first."
    )
    span_retention_days: int = _setting(
        30,
        1,
        3_650,
        "Spans received more than this many days ago are dropped, a whole day at a time, by the"
        " sweeper (whatever their todo's age).",
    )
    activity_max_per_todo: int = _setting(500, 10, 100_000, "Activity rows kept per todo.")
    notes_max_per_attempt: int = _setting(
        100, 1, 10_000, "Progress notes kept per attempt; later ones are counted, not stored."
    )
    waterfall_max_spans: int = _setting(2_000, 10, 100_000, "Spans drawn in a todo's waterfall.")
    spans_max_per_todo: int = _setting(5_000, 10, 1_000_000, "Spans stored per todo.")
    spans_max_per_attempt: int = _setting(
        2_000, 10, 1_000_000, "Spans stored per attempt; later ones are counted, not stored."
    )
    otlp_capture_content: int = _setting(
        0,
        0,
        1,
        "1: keep spans' tool inputs/outputs and message contents (cut, credentials masked);"
        " 0: drop them.",
    )
    # Request rates, per minute; 0 lifts the limit. The per-address budgets are checked before
    # authentication, so a flood of bad keys never reaches the database.
    otlp_rate_per_address: int = _setting(
        1_200, 0, 10_000_000, "OTLP requests per minute from one client address (0: no limit)."
    )
    otlp_rate_per_endpoint: int = _setting(
        600, 0, 10_000_000, "OTLP requests per minute to one endpoint (0: no limit)."
    )
    mcp_rate_per_address: int = _setting(
        12_000, 0, 10_000_000, "MCP requests per minute from one client address (0: no limit)."
    )
    mcp_rate_per_endpoint: int = _setting(
        6_000, 0, 10_000_000, "MCP requests per minute to one endpoint (0: no limit)."
    )
    a2a_rate_per_address: int = _setting(
        6_000, 0, 10_000_000, "A2A requests per minute from one client address (0: no limit)."
    )
    a2a_rate_per_endpoint: int = _setting(
        3_000, 0, 10_000_000, "A2A requests per minute to one endpoint (0: no limit)."
    )
    oauth_rate_per_address: int = _setting(
        300,
        0,
        10_000_000,
        "OAuth token and registration requests per minute from one client address (0: no limit).",
    )
    hooks_rate_per_address: int = _setting(
        6_000, 0, 10_000_000, "Webhook deliveries per minute from one address (0: no limit)."
    )
    hooks_rate_per_source: int = _setting(
        1_200,
        0,
        10_000_000,
        "Webhook deliveries per minute to one source that pass its signature (0: no limit).",
    )
    hooks_rejected_per_source: int = _setting(
        60,
        0,
        10_000_000,
        "Deliveries with a bad signature stored per minute per source; beyond it they answer 429"
        " and are not stored (0: no limit).",
    )
    ring_unclaimed_after_seconds: int = _setting(
        600, 10, 86_400, "Re-ring a pending todo left unclaimed this long."
    )
    ring_unclaimed_max_attempts: int = _setting(
        5, 0, 100, "Rings a todo may get in all; past it the unclaimed sweep rings it no more."
    )
    ring_gate_seconds: int = _setting(
        60, 1, 3_600, "At most one ring per todo this often (every process together)."
    )
    push_timeout_seconds: int = _setting(5, 1, 30, "How long one push ring may take.")
    push_max_tries: int = _setting(
        4, 1, 20, "Tries of one push ring (backoff doubles from 5 s) before it is failed."
    )
    push_breaker_failures: int = _setting(
        5, 1, 1_000, "Failed tries in a row that open an endpoint's push circuit breaker."
    )
    push_breaker_seconds: int = _setting(
        60, 1, 86_400, "How long an open breaker holds pushes before one is tried again."
    )


FIELDS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(RuntimeSettings)}

_lock = threading.Lock()
_cached: tuple[float, RuntimeSettings] | None = None


class InvalidSetting(ValueError):
    pass


def validate(key: str, value: Any) -> int:
    """Return ``value`` as the setting's type, or raise ``InvalidSetting`` saying why."""
    spec = FIELDS.get(key)
    if spec is None:
        raise InvalidSetting(f"unknown setting {key!r}; known: {', '.join(sorted(FIELDS))}")
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSetting(f"{key} must be an integer, not {value!r}")
    low, high = spec.metadata["min"], spec.metadata["max"]
    if not low <= value <= high:
        raise InvalidSetting(f"{key} must be between {low} and {high}, not {value}")
    return value


def load() -> RuntimeSettings:
    """Read the table and build a snapshot; a stored value that no longer validates is ignored."""
    from switchboard.models import Setting

    overrides: dict[str, int] = {}
    for key, value in Setting.objects.values_list("key", "value"):
        try:
            overrides[key] = validate(key, value)
        except InvalidSetting:
            continue  # a row left by an older version, or edited by hand: the default stands
    return RuntimeSettings(**overrides)


def current() -> RuntimeSettings:
    global _cached
    now = time.monotonic()
    cached = _cached
    if cached is not None and now - cached[0] < CACHE_TTL_SECONDS:
        return cached[1]
    snapshot = load()
    with _lock:
        _cached = (now, snapshot)
    return snapshot


async def acurrent() -> RuntimeSettings:
    """``current()`` for async code: the cached snapshot, or a read in a worker thread."""
    cached = _cached
    if cached is not None and time.monotonic() - cached[0] < CACHE_TTL_SECONDS:
        return cached[1]
    from switchboard.lib import dbthread

    return await dbthread.run(current)


async def acurrent_or_defaults() -> RuntimeSettings:
    """``acurrent()``, or the defaults when the table cannot be read.

    For checks that must work while the database does not: the request rate limits, which run
    before anything else touches it. The failure is logged; the request's own database work
    then fails, and answers, as it would have.
    """
    try:
        return await acurrent()
    except Exception:
        logger.warning("runtime settings unreadable; using the defaults", exc_info=True)
        return RuntimeSettings()


def clear_cache() -> None:
    global _cached
    with _lock:
        _cached = None


def put(key: str, value: Any) -> None:
    """Store an override after validating it."""
    from switchboard.models import Setting

    Setting.objects.update_or_create(key=key, defaults={"value": validate(key, value)})
    clear_cache()
