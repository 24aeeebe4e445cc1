"""Sending alert messages: the sweeper's POST to a webhook channel, or its email.

Messages are queued in ``alert_deliveries`` by the statements that open and resolve alerts
(``alerts/sql/open_alerts.sql``, ``resolve_alerts.sql``) and by a test (``alerts/channels.py``);
they are sent here after that commits, never inside a transaction or a request, the way
``todos/push.py`` sends push rings, and with its parts:

- the SSRF guard of ``switchboard/lib/webhook_out.py`` (``SWITCHBOARD_PUSH_ALLOW_PRIVATE``
  allows private targets), and no redirect followed;
- its timeout, tries and circuit breaker settings (``push_timeout_seconds``, ``push_max_tries``,
  ``push_breaker_failures``, ``push_breaker_seconds``) and its backoff (doubling from
  ``push.RETRY_FIRST_SECONDS``), with one breaker per channel (``alert_circuits``);
- a timeout, a connection error, a 429 or a 5xx is tried again; any other answer, or a refused
  target, fails the message at once. A channel's messages go one after the other and stop at its
  first failure (the rest are handed back untried); channels are sent to in parallel, so a slow
  channel costs a pass at most one timeout and never holds up the others.

Webhooks are signed the Standard Webhooks way: ``webhook-id`` (the message's id, the same on
every try), ``webhook-timestamp`` and ``webhook-signature: v1,<base64 HMAC-SHA256 of
id.timestamp.body>`` keyed with the base64 key of the channel's ``whsec_`` secret.
"""

from __future__ import annotations

import json
import logging
import smtplib
import time
from collections import defaultdict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core import mail

from alerts import messages
from alerts.models import ChannelKind
from switchboard import runtime_settings
from switchboard.lib import webhook_out
from switchboard.lib.sql import fetch_all, fetch_one, load
from switchboard.lib.text import cut_utf8
from todos import push
from todos.intake import routing

log = logging.getLogger(__name__)

BATCH = 100
KEEP_PER_CHANNEL = 200  # finished messages kept per channel for the Board
USER_AGENT = "Switchboard-Alerts/1"
ERROR_MAX_BYTES = 512

_SQL = Path(__file__).resolve().parent / "sql"
CLAIM = load(_SQL, "claim_deliveries")
RECORD = load(_SQL, "record_delivery")
UNCLAIM = load(_SQL, "unclaim_deliveries")


@dataclass
class Outcome:
    delivery_id: int
    channel_id: Any
    delivered: bool = False
    retry: bool = False
    status_code: int | None = None
    error: str = ""
    duration_ms: int | None = None


@dataclass
class SendReport:
    delivered: int = 0
    failed: int = 0  # tries that failed (retried later or failed for good)
    handed_back: int = 0
    opened: list[str] = field(default_factory=list)  # channels whose breaker this pass opened
    outcomes: list[Outcome] = field(default_factory=list)


def headers(secret: str, message_id: str, body: bytes, timestamp: int) -> dict[str, str]:
    """The Standard Webhooks headers of one try."""
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        routing.STANDARD_ID: message_id,
        routing.STANDARD_TIMESTAMP: str(timestamp),
        routing.STANDARD_SIGNATURE: routing.sign_standard(secret, message_id, timestamp, body),
    }


def _post(job: dict[str, Any], out: Outcome, timeout: float, allow_private: bool) -> None:
    payload = messages.body(job)
    sent = headers(job["secret"], str(job["message_id"]), payload, int(time.time()))
    tried = webhook_out.try_post(
        job["url"], payload, sent, timeout=timeout, allow_private=allow_private
    )
    out.delivered, out.retry, out.error = tried.delivered, tried.retry, tried.error
    out.status_code, out.duration_ms = tried.status_code, tried.duration_ms


def _mail(job: dict[str, Any], out: Outcome, timeout: float) -> None:
    subject, text = messages.email(job)
    started = time.monotonic()
    try:
        connection = mail.get_connection(timeout=timeout)
        mail.EmailMessage(
            subject, text, settings.DEFAULT_FROM_EMAIL, [job["email"]], connection=connection
        ).send()
    except smtplib.SMTPResponseException as exc:
        # 4xx: try again later; 5xx: the server refused it for good.
        out.retry = 400 <= exc.smtp_code < 500
        out.status_code = exc.smtp_code
        out.error = f"SMTP {exc.smtp_code}"
    except (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused) as exc:
        out.error = f"{type(exc).__name__}: {exc}"
    except OSError as exc:  # smtplib's other errors, timeouts and refused connections
        out.retry = True
        out.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    else:
        out.delivered = True
    out.duration_ms = int((time.monotonic() - started) * 1000)


def send_one(job: dict[str, Any], timeout: float, allow_private: bool) -> Outcome:
    """Try one claimed message; never raises for its receiver."""
    out = Outcome(job["id"], job["channel_id"])
    try:
        if job["channel_kind"] == ChannelKind.WEBHOOK:
            _post(job, out, timeout, allow_private)
        else:
            _mail(job, out, timeout)
    except Exception as exc:  # a mail backend's own failure: recorded, never the sweep's
        log.exception("alert message %s could not be sent", job["id"])
        out.retry = True
        out.error = f"{type(exc).__name__}: {exc}"
    return out


def _send_channel(
    jobs: list[dict[str, Any]], timeout: float, allow_private: bool
) -> tuple[list[Outcome], list[int]]:
    outcomes: list[Outcome] = []
    for i, job in enumerate(jobs):
        outcome = send_one(job, timeout, allow_private)
        outcomes.append(outcome)
        if not outcome.delivered:
            return outcomes, [j["id"] for j in jobs[i + 1 :]]
    return outcomes, []


def send_due(
    *, allow_private: bool | None = None, limit: int = BATCH, only: int | None = None
) -> SendReport:
    """Send the alert messages that are due (or message ``only``) and record each try."""
    if allow_private is None:
        allow_private = settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE
    current = runtime_settings.current()
    timeout = float(current.push_timeout_seconds)
    jobs = fetch_all(
        CLAIM, {"limit": limit, "lease_seconds": timeout * (limit + 1) + 30, "only": only}
    )
    report = SendReport()
    if not jobs:
        return report
    for job in jobs:  # jsonb arrives as its text, as Django's JSONField expects it
        if isinstance(job["detail"], str):
            job["detail"] = json.loads(job["detail"])
    by_channel: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    for job in jobs:
        by_channel[job["channel_id"]].append(job)
    with ThreadPoolExecutor(min(push.PARALLEL_ENDPOINTS, len(by_channel))) as pool:
        results = list(
            pool.map(lambda js: _send_channel(js, timeout, allow_private), by_channel.values())
        )
    tries_of = {job["id"]: job["tries"] for job in jobs}
    for outcomes, untried in results:
        for out in outcomes:
            report.outcomes.append(out)
            tries = tries_of[out.delivery_id]
            retry = out.retry and tries < current.push_max_tries
            backoff = min(push.RETRY_FIRST_SECONDS * 2 ** (tries - 1), push.RETRY_MAX_SECONDS)
            circuit = fetch_one(
                RECORD,
                {
                    "id": out.delivery_id,
                    "delivered": out.delivered,
                    "retry": retry,
                    "status_code": out.status_code,
                    "error": cut_utf8(out.error, ERROR_MAX_BYTES)[0] if out.error else "",
                    "duration_ms": out.duration_ms,
                    "backoff_seconds": backoff,
                    "breaker_failures": current.push_breaker_failures,
                    "breaker_seconds": current.push_breaker_seconds,
                    "keep": KEEP_PER_CHANNEL,
                },
            )
            if out.delivered:
                report.delivered += 1
                continue
            report.failed += 1
            log.info(
                "alert message %s to %s failed: %s", out.delivery_id, out.channel_id, out.error
            )
            if (
                circuit is not None
                and circuit["failures"] == current.push_breaker_failures
                and circuit["open_until"] is not None
            ):
                report.opened.append(str(out.channel_id))
        unclaim(untried)
        report.handed_back += len(untried)
    return report


def unclaim(ids: Sequence[int]) -> None:
    if ids:
        fetch_all(UNCLAIM, {"ids": list(ids)})
