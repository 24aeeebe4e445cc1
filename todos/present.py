"""How the Board says a todo's attempts: the attempt row, its outcome badge, its duration, and
stored JSON pretty-printed. Pure: no request, no database, no markup.

Below every page module that shows attempts: the drawer's context (``todos/pages.py``), the
trail page and the Activity feed (``activity/views.py``), the trail's builders
(``activity/markup.py``), so they say the same of an attempt without importing each other.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from attempts.models import DIED_OUTCOMES, ClaimerKind, Outcome
from attempts.types import AttemptView
from switchboard.actors import Names
from todos.models import Todo

OUTCOME_WORDS = {
    Outcome.LEASE_EXPIRED: "died: lease expired, taken over",
    Outcome.REAPED: "died: lease expired, reaped",
    Outcome.FAILED: "failed: reported by its holder",
    Outcome.COMPLETED: "completed",
    Outcome.RELEASED: "released",
    Outcome.CANCELED: "canceled",
    Outcome.REVOKED: "revoked with its endpoint",
    Outcome.TIMED_OUT: "timed out: its deadline passed",
    Outcome.BUDGET_EXCEEDED: "stopped: its cost cap was reached",
}


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """An attempt as the drawer shows it."""

    view: AttemptView
    claimer: str
    duration: str
    outcome_word: str
    outcome_class: str
    artifact_link: bool

    @property
    def died(self) -> bool:
        return self.view.outcome in DIED_OUTCOMES

    @property
    def failed(self) -> bool:
        return self.view.outcome == Outcome.FAILED


def duration(start: dt.datetime, end: dt.datetime) -> str:
    """How long from ``start`` to ``end``, in seconds, minutes or hours (never negative)."""
    seconds = max(0, int((end - start).total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def outcome_badge(outcome: str | None) -> tuple[str, str]:
    """An attempt's outcome as its badge shows it, words and class, the same on the drawer,
    the trail page and the Activity feed: died and failed told apart."""
    if outcome is None:
        return "in progress", "outcome-open"
    if outcome in DIED_OUTCOMES:
        return OUTCOME_WORDS[Outcome(outcome)], "outcome-died"
    if outcome in Outcome.values:
        return OUTCOME_WORDS.get(Outcome(outcome), outcome), f"outcome-{outcome}"
    return outcome, "outcome-other"


def attempt_row(a: AttemptView, todo: Todo, now: dt.datetime, names: Names) -> AttemptRow:
    """``a`` as the Board shows it, its duration up to ``now`` while it is open; ``names``
    holds the page's actors (switchboard/actors.py), an operator's lease among them."""
    if a.claimer_kind == ClaimerKind.OWNER:
        claimer = names.holder(a.owner)
    elif a.claimer_endpoint_id == todo.endpoint_id:
        claimer = f"endpoint {todo.endpoint.slug}"
    else:  # not expected (claims are scoped to the todo's endpoint), but say what is stored
        claimer = f"endpoint {a.claimer_endpoint_id}"
    word, css = outcome_badge(a.outcome)
    end = a.ended_at or now
    return AttemptRow(
        view=a,
        claimer=claimer,
        duration=duration(a.claimed_at, end) + ("" if a.ended_at else " so far"),
        outcome_word=word,
        outcome_class=css,
        artifact_link=bool(a.artifact) and urlsplit(a.artifact or "").scheme == "https",
    )


def pretty(value: Any) -> str:
    """Stored JSON for a ``<pre>``: indented, non-ASCII kept (the template escapes it)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)
