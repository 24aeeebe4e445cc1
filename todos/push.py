"""Push rings: the sweeper's POST to an endpoint's ``push_url`` (docs/guides/push-rings.md).

A ring (``todos/sql/ring.sql``, ``ring_due.sql``) queues a ``push_attempts`` row in the
transaction that takes the todo's ring gate, so a push goes out at most as often as the gate
rings, and only after that transaction commits. The sweeper then sends what is due here, never a
request: a slow or failing receiver costs the sweeper at most one timeout per endpoint and pass
and never touches the todo, which stays claimable whatever the push's fate.

The outbox: a ring's own statement queues its push (``_ring_arms.sql``); this module is the only
other writer of ``push_attempts`` and ``push_circuits``: it takes, records and hands back pushes
(``claim_pushes``, ``record_push``, ``unclaim_pushes``), and queues the Board's test ring
(``queue_test_push``), one statement each.

- Body: ``{"queue", "todo_id", "ring_id", "reason"}`` (compact JSON), signed with the endpoint's
  push secret (``switchboard/lib/webhook_out.py``); ``ring_id`` is the same id as the todo's
  ``rung`` activity row, so a receiver can drop a duplicate delivery.
- Tries: a timeout, a connection error, a 429 or a 5xx is tried again after a backoff that
  doubles from ``RETRY_FIRST_SECONDS``, up to ``push_max_tries`` tries; any other answer but a
  2xx, and a refused target (SSRF), fail it at once.
- Circuit breaker, per endpoint (``push_circuits``): ``push_breaker_failures`` failed tries in
  a row open it for ``push_breaker_seconds``, during which nothing is sent to the endpoint, test
  rings included (the Board refuses a test ring then, and more than one per
  ``TEST_RING_EVERY_SECONDS``); then the next due push is tried, and a delivery closes it.
  Within one pass an endpoint's pushes go one after the other and stop at its first failure
  (the rest are handed back untried), while different endpoints are sent to in parallel.
"""

from __future__ import annotations

import json
import logging
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from uuid import UUID, uuid4

from django.conf import settings
from django.db import connection

from switchboard import runtime_settings
from switchboard.lib import webhook_out
from switchboard.lib.sql import fetch_all, fetch_one, load
from switchboard.lib.text import cut_utf8
from todos.limits import ACTIVITY_TEXT_MAX_BYTES

log = logging.getLogger(__name__)

BATCH = 100  # pushes taken per pass
PARALLEL_ENDPOINTS = 8
RETRY_FIRST_SECONDS = 5.0
RETRY_MAX_SECONDS = 300.0
KEEP_PER_ENDPOINT = 200  # finished pushes kept per endpoint for the Board
USER_AGENT = "Switchboard-Push/1"
TEST_RING_EVERY_SECONDS = 10  # at most one test ring per endpoint in this many seconds

_SQL = Path(__file__).resolve().parent / "sql"
CLAIM_PUSHES = load(_SQL, "claim_pushes")
RECORD_PUSH = load(_SQL, "record_push")
UNCLAIM_PUSHES = load(_SQL, "unclaim_pushes")
QUEUE_TEST_PUSH = load(_SQL, "queue_test_push")
# By name, for ``manage.py sql``.
STATEMENTS = {
    "claim_pushes": CLAIM_PUSHES,
    "record_push": RECORD_PUSH,
    "unclaim_pushes": UNCLAIM_PUSHES,
    "queue_test_push": QUEUE_TEST_PUSH,
}


@dataclass
class Outcome:
    push_id: int
    endpoint_id: Any
    delivered: bool = False
    retry: bool = False
    status_code: int | None = None
    error: str = ""
    duration_ms: int | None = None


@dataclass
class PushReport:
    delivered: int = 0
    failed: int = 0  # tries that failed (retried later or failed for good)
    handed_back: int = 0
    opened: list[str] = field(default_factory=list)  # endpoints whose breaker this pass opened


# --- the outbox -----------------------------------------------------------------------------


def claim_pushes(limit: int, lease_seconds: float) -> list[dict[str, Any]]:
    """Take up to ``limit`` queued push rings that are due (``claim_pushes.sql``), counting a
    try each; send them after this commits (``send_due``)."""
    return fetch_all(CLAIM_PUSHES, {"limit": limit, "lease_seconds": lease_seconds})


def record_push(
    push_id: int,
    *,
    delivered: bool,
    retry: bool,
    status_code: int | None,
    error: str,
    duration_ms: int | None,
    backoff_seconds: float,
    keep: int,
) -> dict[str, Any] | None:
    """Record one try of a push ring and move the endpoint's circuit breaker
    (``record_push.sql``); return the breaker's ``failures`` and ``open_until``."""
    current = runtime_settings.current()
    return fetch_one(
        RECORD_PUSH,
        {
            "id": push_id,
            "delivered": delivered,
            "retry": retry,
            "status_code": status_code,
            "error": cut_utf8(error, ACTIVITY_TEXT_MAX_BYTES)[0] if error else "",
            "duration_ms": duration_ms,
            "backoff_seconds": backoff_seconds,
            "breaker_failures": current.push_breaker_failures,
            "breaker_seconds": current.push_breaker_seconds,
            "keep": keep,
        },
    )


def unclaim_pushes(push_ids: Sequence[int]) -> None:
    """Hand back push rings taken but not tried (``unclaim_pushes.sql``)."""
    if push_ids:
        fetch_all(UNCLAIM_PUSHES, {"ids": list(push_ids)})


@dataclass(frozen=True)
class TestRing:
    """What the Board's "send test ring" did: ``queued`` (with the ring's id), or why not."""

    outcome: Literal["queued", "no_push_url", "breaker_open", "throttled"]
    ring_id: UUID | None = None


def queue_test_push(endpoint_id: UUID) -> TestRing:
    """Queue a test push ring for the endpoint (``queue_test_push.sql``): refused without a push
    URL, while its circuit breaker is open, and within ``TEST_RING_EVERY_SECONDS`` of the last."""
    ring_id = uuid4()
    row = fetch_one(
        QUEUE_TEST_PUSH,
        {"endpoint_id": endpoint_id, "ring_id": ring_id, "every_seconds": TEST_RING_EVERY_SECONDS},
    )
    if row is None:
        return TestRing("no_push_url")
    if row["breaker_open"]:
        return TestRing("breaker_open")
    if row["throttled"]:
        return TestRing("throttled")
    return TestRing("queued", ring_id)


# --- sending ---------------------------------------------------------------------------------


def body(job: dict[str, Any]) -> bytes:
    """The push's JSON body, compact, in a fixed key order."""
    return json.dumps(
        {
            "queue": job["queue"],
            "todo_id": job["todo_id"],
            "ring_id": str(job["ring_id"]),
            "reason": job["reason"],
        },
        separators=(",", ":"),
    ).encode()


def _send(job: dict[str, Any], timeout: float, allow_private: bool) -> Outcome:
    out = Outcome(job["id"], job["endpoint_id"])
    payload = body(job)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        webhook_out.SIGNATURE_HEADER: webhook_out.signature(
            job["push_secret"], payload, int(time.time())
        ),
    }
    tried = webhook_out.try_post(
        job["push_url"], payload, headers, timeout=timeout, allow_private=allow_private
    )
    out.delivered, out.retry, out.error = tried.delivered, tried.retry, tried.error
    out.status_code, out.duration_ms = tried.status_code, tried.duration_ms
    return out


def _send_endpoint(
    jobs: list[dict[str, Any]], timeout: float, allow_private: bool
) -> tuple[list[Outcome], list[int]]:
    """Send one endpoint's pushes in order, stopping at the first failure; (outcomes, untried)."""
    outcomes: list[Outcome] = []
    for i, job in enumerate(jobs):
        outcome = _send(job, timeout, allow_private)
        outcomes.append(outcome)
        if not outcome.delivered:
            return outcomes, [j["id"] for j in jobs[i + 1 :]]
    return outcomes, []


def send_due(*, allow_private: bool | None = None, limit: int = BATCH) -> PushReport:
    """Send the push rings that are due and record each try; never raises for a receiver."""
    if allow_private is None:
        allow_private = settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE
    current = runtime_settings.current()
    timeout = float(current.push_timeout_seconds)
    # The lease outlives a whole pass's sends to one endpoint, so no other sweeper retakes a
    # push while it is being sent.
    jobs = claim_pushes(limit, lease_seconds=timeout * (limit + 1) + 30)
    report = PushReport()
    if not jobs:
        return report
    by_endpoint: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for job in jobs:
        by_endpoint[job["endpoint_id"]].append(job)
    with ThreadPoolExecutor(min(PARALLEL_ENDPOINTS, len(by_endpoint))) as pool:
        results = list(
            pool.map(lambda js: _send_endpoint(js, timeout, allow_private), by_endpoint.values())
        )
    tries_of = {job["id"]: job["tries"] for job in jobs}
    for outcomes, untried in results:
        for out in outcomes:
            tries = tries_of[out.push_id]
            retry = out.retry and tries < current.push_max_tries
            backoff = min(RETRY_FIRST_SECONDS * 2 ** (tries - 1), RETRY_MAX_SECONDS)
            circuit = record_push(
                out.push_id,
                delivered=out.delivered,
                retry=retry,
                status_code=out.status_code,
                error=out.error,
                duration_ms=out.duration_ms,
                backoff_seconds=backoff,
                keep=KEEP_PER_ENDPOINT,
            )
            if out.delivered:
                report.delivered += 1
                continue
            report.failed += 1
            log.info("push %s to endpoint %s failed: %s", out.push_id, out.endpoint_id, out.error)
            if (
                circuit is not None
                and circuit["failures"] == current.push_breaker_failures
                and circuit["open_until"] is not None
            ):
                report.opened.append(str(out.endpoint_id))
        unclaim_pushes(untried)
        report.handed_back += len(untried)
    return report


def breaker(endpoint_id: Any) -> dict[str, Any]:
    """The endpoint's circuit breaker as the Board shows it: failed tries in a row, open until."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT failures, open_until, open_until > now() FROM push_circuits"
            " WHERE endpoint_id = %s",
            [endpoint_id],
        )
        row = cursor.fetchone()
    if row is None:
        return {"failures": 0, "open_until": None, "open": False}
    return {"failures": row[0], "open_until": row[1], "open": bool(row[2])}
