"""What an alert says: its one-line summary, the webhook's JSON body and the email (pure).

The webhook body is Slack-compatible: Slack (and Mattermost, Discord's /slack endpoint, most
chat tools' "incoming webhooks") shows ``text``; a receiver of its own reads ``alert``, which
names the todo, the queue and the endpoint concerned.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from alerts.models import Message, RuleKind
from switchboard.lib.text import money

SUMMARY_MAX_CHARS = 500
# What an alert's detail keeps once its todo is forgotten (activity/forget.py) or deleted by
# retention (todos/retention.py): the facts the evaluators record that are not the todo's
# content. Anything else (the title, and any key not named here) is dropped: a key added later
# is erased until it is listed.
FORGET_KEEPS = frozenset(
    {
        "attempts",  # dead_letter
        "at",  # dead_letter, deadline_missed
        "reason",  # deadline_missed: start_by or finish_by
        "holder",  # silent_claim: the lease's owner, kept like each attempt's claimer
        "heard_at",  # silent_claim
        "for_seconds",  # silent_claim, oldest_pending
        "waiting_since",  # oldest_pending
    }
)
# How an alert whose todo's content was erased says why (``forgotten``'s ``mark``, a key of
# its detail), at the end of its summary.
GONE = {
    "forgotten": "the todo was forgotten",  # activity/forget.py
    "deleted": "the todo was deleted by retention",  # todos/retention.py
}
_PREFIX = {Message.OPENED: "[alert]", Message.RESOLVED: "[resolved]", Message.TEST: "[test]"}


def duration(seconds: int | None) -> str:
    """``90`` → ``1m30s``, as people read a rule's T."""
    seconds = int(seconds or 0)
    if seconds < 60:
        return f"{seconds}s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m" if minutes else f"{hours}h"


def _where(endpoint: str, queue: str | None) -> str:
    return f"{endpoint}/{queue}" if queue else endpoint


def summary(
    kind: str, *, endpoint: str, queue: str | None, todo_id: str | None, detail: Mapping[str, Any]
) -> str:
    """The alert's one line, naming what it is about (and, for the alert of a todo forgotten or
    deleted, which: ``forgotten``)."""
    where = _where(endpoint, queue)
    title = f": {detail['title']}" if detail.get("title") else ""
    if kind == RuleKind.DEAD_LETTER:
        attempts = detail.get("attempts", 0)
        text = f"Todo {todo_id} dead-lettered on {where} after {attempts} attempt(s){title}"
    elif kind == RuleKind.DEADLINE_MISSED:
        text = f"Todo {todo_id} missed its {detail.get('reason', 'deadline')} on {where}{title}"
    elif kind in (RuleKind.BUDGET_WARNING, RuleKind.BUDGET_EXCEEDED):
        scope = f"Queue {where}" if queue else f"Endpoint {endpoint}"
        level = "80 %" if kind == RuleKind.BUDGET_WARNING else "100 %"
        text = (
            f"{scope}: {level} of its daily budget spent on {detail.get('day')}"
            f" ({money(detail.get('spent_usd'))} of {money(detail.get('budget_usd'))})"
        )
    elif kind == RuleKind.DEPTH:
        text = (
            f"Queue {where}: {detail.get('depth')} todos pending, more than"
            f" {detail.get('threshold')} for {duration(detail.get('for_seconds'))}"
        )
    elif kind == RuleKind.OLDEST_PENDING:
        text = (
            f"Queue {where}: todo {todo_id} has waited more than"
            f" {duration(detail.get('for_seconds'))} to be claimed"
        )
    elif kind == RuleKind.SILENT_CLAIM:
        text = (
            f"Todo {todo_id} on {where}: claimed, no heartbeat for"
            f" {duration(detail.get('for_seconds'))}{title}"
        )
    elif kind == RuleKind.PUSH_BREAKER:
        text = (
            f"Endpoint {endpoint}: push circuit breaker open after"
            f" {detail.get('failures')} failed tries"
        )
    else:
        text = f"{kind} on {where}"
    gone = [said for mark, said in GONE.items() if detail.get(mark)]
    if gone:
        text += f"; {gone[0]}"
    return text[:SUMMARY_MAX_CHARS]


def forgotten(detail: Mapping[str, Any], mark: str = "forgotten") -> dict[str, Any]:
    """An alert's detail once its todo is forgotten (or, ``mark`` ``"deleted"``, deleted by
    retention): ``FORGET_KEEPS`` alone, marked ``mark`` (``summary`` then says so)."""
    if mark not in GONE:
        raise ValueError(f"unknown mark {mark!r}")
    # An earlier mark stays: a forgotten todo's alert, deleted later, still says it was forgotten.
    return {k: v for k, v in detail.items() if k in FORGET_KEEPS or k in GONE} | {mark: True}


def _iso(value: Any) -> str | None:
    return value.isoformat() if isinstance(value, dt.datetime) else value


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def resolved_budget(job: Mapping[str, Any]) -> str:
    """A budget alert's resolved line, without the figures it opened with, which are stale by
    then: its UTC day is over, or the day is no longer spent that far (the budget was raised or
    cleared, a ``manage.py reprice`` lowered the spend)."""
    detail = job["detail"] or {}
    day = detail.get("day")
    queue = job["queue"]
    scope = f"Queue {_where(job['endpoint'], queue)}" if queue else f"Endpoint {job['endpoint']}"
    level = "80 %" if job["kind"] == RuleKind.BUDGET_WARNING else "100 %"
    resolved_at = job.get("resolved_at")
    resolved_on = resolved_at.astimezone(dt.UTC).date().isoformat() if resolved_at else ""
    if resolved_on > str(day):
        return f"{scope}: {level} of its daily budget spent on {day}; that UTC day is over"
    return f"{scope}: its daily budget is no longer {level} spent on {day}"


def _channel_label(job: Mapping[str, Any]) -> str:
    """`` channel NAME`` for a test's subject, the channel's address when it has no name (the
    alerts guide's own ``channel add`` gives none), nothing when neither is known."""
    name = job.get("channel_name") or job.get("email") or urlsplit(job.get("url") or "").netloc
    return f" channel {name}" if name else ""


def text(job: Mapping[str, Any]) -> str:
    """The message's line: its prefix and the alert's summary (or the test's); a budget
    alert's resolved line is ``resolved_budget``'s."""
    if job["message"] == Message.TEST:
        return f"{_PREFIX[Message.TEST]} Test alert from Switchboard{_channel_label(job)}"
    if job["message"] == Message.RESOLVED and job.get("kind") in (
        RuleKind.BUDGET_WARNING,
        RuleKind.BUDGET_EXCEEDED,
    ):
        return f"{_PREFIX[Message.RESOLVED]} {resolved_budget(job)}"
    return f"{_PREFIX[job['message']]} {job['summary']}"


def body(job: Mapping[str, Any]) -> bytes:
    """The webhook's JSON body (compact, fixed key order) for one claimed message."""
    alert: dict[str, Any] = {
        "message_id": str(job["message_id"]),
        "message": job["message"],
        "channel_id": str(job["channel_id"]),
    }
    if job["message"] != Message.TEST:
        alert |= {
            "id": job["alert_id"],
            "kind": job["kind"],
            "state": job["state"],
            "summary": job["summary"],
            "subject": job["subject"],
            "todo_id": job["todo_id"],
            "queue": job["queue"],
            "endpoint": job["endpoint"],
            "endpoint_id": str(job["endpoint_id"]) if job["endpoint_id"] else None,
            "since": _iso(job["since"]),
            "opened_at": _iso(job["opened_at"]),
            "resolved_at": _iso(job["resolved_at"]),
            "detail": {k: _plain(v) for k, v in (job["detail"] or {}).items()},
        }
    return json.dumps({"text": text(job), "alert": alert}, separators=(",", ":")).encode()


def email(job: Mapping[str, Any]) -> tuple[str, str]:
    """The email's subject and plain-text body for one claimed message."""
    line = text(job)
    subject = "Switchboard " + line
    if len(subject) > 200:
        subject = subject[:199] + "…"
    lines = [line, ""]
    if job["message"] != Message.TEST:
        for label, key in (
            ("Kind", "kind"),
            ("Endpoint", "endpoint"),
            ("Queue", "queue"),
            ("Todo", "todo_id"),
            ("Opened", "opened_at"),
            ("Resolved", "resolved_at"),
        ):
            if job.get(key):
                lines.append(f"{label}: {_iso(job[key])}")
    lines += ["", f"Message id: {job['message_id']}"]
    return subject, "\n".join(lines) + "\n"
