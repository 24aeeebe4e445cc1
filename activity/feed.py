"""The Activity feed: what happened across a human's todos, newest first, and its unread count.

An entry is an attempt's ending (``todo_attempts`` with ``ended_at``) or an activity row
(``todo_activity``, rings left out: they are shown on the trail only), on a todo of one of the
human's endpoints. One statement reads a page (activity/sql/feed.sql): each arm walks, for
each of the human's endpoints, that endpoint's ``(endpoint_id, at)`` index newest first and
stops after a page; the walks are merged by ``at``. So a page costs about a page per endpoint
of the human's, their own rows only, whatever other owners hold and however long the history
(docs/decisions/0039-feed-by-endpoint.md): the rows carry their todo's endpoint for it.

Pages follow a keyset cursor, the last entry's ``(at, kind, todo_id, seq)``: the order is
``at`` newest first and then the other three ascending, which is total (an attempt's seq and a
row's seq are told apart by ``kind``), so no entry is skipped or repeated between pages, even
among entries at one instant. The cursor travels as opaque text; text that does not decode to
one starts the feed over.

The rail's unread badge is the same read with ``at > humans.activity_seen_at`` (the day the
human joined until they first open the feed, ``unread_since``), counted up to ``UNREAD_CAP``;
opening the feed's first page moves ``activity_seen_at`` to now.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any, Self
from uuid import UUID

from activity.models import Kind
from activity.trail import Said
from attempts.models import Outcome
from switchboard import actors
from switchboard.lib import keyset
from switchboard.lib.actors import Actor
from switchboard.lib.sql import fetch_all, fetch_one, load
from switchboard.models import Human
from switchboard.scope import HUMAN_ENDPOINTS_SQL

PAGE_SIZE = 50
UNREAD_CAP = 100
ATTEMPT_END = "attempt_end"
# The kinds the feed shows and filters by: every activity kind but the doorbell's rings.
ACTIVITY_KINDS = tuple(k for k in Kind.values if k != Kind.RUNG)
KINDS = (*ACTIVITY_KINDS, ATTEMPT_END)
OUTCOMES = tuple(Outcome.values)

_SQL = Path(__file__).parent / "sql"
_TODO_ID = re.compile(r"td_[a-z2-7]{20}")
_SEQ_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class FeedFilters:
    """The feed's filters; empty strings mean "any". ``outcome`` applies to attempt endings
    only, so setting it leaves activity rows out."""

    endpoint: str = ""
    queue: str = ""
    kind: str = ""
    outcome: str = ""

    @classmethod
    def parse(cls, endpoint: str = "", queue: str = "", kind: str = "", outcome: str = "") -> Self:
        """Filters from request parameters: unknown kinds and outcomes mean "any"."""
        return cls(
            endpoint=endpoint.strip(),
            queue=queue.strip(),
            kind=kind if kind in KINDS else "",
            outcome=outcome if outcome in OUTCOMES else "",
        )

    @property
    def attempt_arm(self) -> bool:
        return self.kind in ("", ATTEMPT_END)

    @property
    def activity_arm(self) -> bool:
        return self.kind != ATTEMPT_END and not self.outcome

    @property
    def matches_nothing(self) -> bool:
        """No entry can match: no arm is left, or a value PostgreSQL text cannot hold (NUL)."""
        if not (self.attempt_arm or self.activity_arm):
            return True
        return "\x00" in self.endpoint or "\x00" in self.queue


@dataclass(frozen=True, slots=True)
class Cursor:
    """A keyset position: the last entry shown."""

    at: dt.datetime
    kind: str
    todo_id: str
    seq: int

    def encode(self) -> str:
        return keyset.encode([keyset.stamp(self.at), self.kind, self.todo_id, self.seq])

    @classmethod
    def decode(cls, text: str) -> Cursor | None:
        """The cursor ``text`` encodes, or None for anything else (the feed then starts over)."""
        value = keyset.decode(text, max_chars=200)
        if value is None or len(value) != 4:
            return None
        stamp, kind, todo_id, seq = value
        at = keyset.parse_stamp(stamp)
        if at is None:
            return None
        valid = (
            kind in KINDS
            and isinstance(todo_id, str)
            and _TODO_ID.fullmatch(todo_id) is not None
            and type(seq) is int
            and 0 <= seq <= _SEQ_MAX
        )
        return cls(at, kind, todo_id, seq) if valid else None


@dataclass(frozen=True, slots=True)
class FeedEntry(Said):
    """One entry: an attempt's ending (``kind == "attempt_end"``) or an activity row."""

    at: dt.datetime
    kind: str
    todo_id: str
    seq: int
    attempt_seq: int | None
    actor_kind: str
    actor_ref: str
    actor_label: str | None  # set by ``feed_page`` from switchboard/actors.py
    message: str | None
    truncated: bool
    detail: dict[str, Any]
    outcome: str | None
    disposition: str | None
    claimant: str | None  # an ending's: the label its agent sent with the claim, if any
    title: str
    queue: str
    endpoint_id: UUID
    endpoint_slug: str

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        detail = row["detail"]
        if isinstance(detail, str):  # Django's connection loads jsonb as its text
            detail = json.loads(detail)
        return cls(
            **{name: row[name] for name in _ENTRY_FIELDS if name not in ("detail", "actor_label")},
            detail=detail if isinstance(detail, dict) else {},
            actor_label=None,
        )

    @property
    def cursor(self) -> Cursor:
        return Cursor(self.at, self.kind, self.todo_id, self.seq)

    @property
    def actor(self) -> str:
        """Who did it, as people read it once resolved; for an ending, the lease's holder
        (``operator <username>``, or an agent's own label as given)."""
        return self.actor_label or self.actor_ref

    @property
    def anchor(self) -> str:
        """The entry's fragment id on its todo's trail page (activity/trail.py's anchors)."""
        if self.kind == ATTEMPT_END:
            return f"attempt-{self.seq}-end"
        return f"activity-{self.seq}"


_ENTRY_FIELDS = tuple(f.name for f in fields(FeedEntry))


@dataclass(frozen=True, slots=True)
class FeedPage:
    entries: list[FeedEntry]
    next_cursor: Cursor | None


@dataclass(frozen=True, slots=True)
class _Variant:
    """Which fragments a statement needs: which arms, which filters are set, which bounds.
    Only whether a filter is set chooses the text (its value is a parameter), so there are
    few variants, each built once."""

    attempts: bool = True
    activity: bool = True
    endpoint: bool = False
    queue: bool = False
    kind: bool = False  # an activity kind (attempt_end chooses the arm instead)
    outcome: bool = False
    after: bool = False
    since: bool = False

    @classmethod
    def of(cls, filters: FeedFilters, *, after: bool = False) -> Self:
        return cls(
            attempts=filters.attempt_arm,
            activity=filters.activity_arm,
            endpoint=bool(filters.endpoint),
            queue=bool(filters.queue),
            kind=filters.kind in ACTIVITY_KINDS,
            outcome=bool(filters.outcome),
            after=after,
        )


def _bounds(v: _Variant, at: str, key: str) -> str:
    # The cursor's `at` twice: as an index bound (<=), then the tie-break within its instant;
    # the row comparison orders like the feed's ORDER BY (same columns, same collation).
    fragment = ""
    if v.after:
        fragment += (
            f" AND {at} <= %(after_at)s AND ({at} < %(after_at)s OR ({key})"
            " > (%(after_kind)s::text, %(after_todo_id)s::text, %(after_seq)s::bigint))"
        )
    if v.since:
        fragment += f" AND {at} > %(since)s"
    return fragment


def _arms(v: _Variant) -> dict[str, str]:
    """The ``@{arms}`` marker's text and the fragments that fill it."""
    arms = [
        marker
        for wanted, marker in (
            (v.attempts, "@{feed_attempt_ends}"),
            (v.activity, "@{feed_activity}"),
        )
        if wanted
    ]

    def queue(todo: str) -> str:
        return " " + load(_SQL, "_feed_queue", todo=todo) if v.queue else ""

    attempt_filter = _bounds(v, "a.ended_at", "'attempt_end'::text, a.todo_id, a.seq::bigint")
    activity_filter = _bounds(v, "v.at", "v.kind, v.todo_id, v.seq")
    return {
        "arms": "\nUNION ALL\n".join(arms),
        "attempt_filter": attempt_filter
        + (" AND a.outcome = %(outcome)s" if v.outcome else "")
        + queue("a.todo_id"),
        "activity_filter": activity_filter
        + (" AND v.kind = %(kind)s" if v.kind else "")
        + queue("v.todo_id"),
        "human_endpoints": HUMAN_ENDPOINTS_SQL,
        "endpoint_filter": " AND e.slug = %(endpoint)s" if v.endpoint else "",
    }


@cache
def statement(variant: _Variant) -> str:
    """The page statement for one variant, built once from fixed fragments (a generic
    ``(%(queue)s = '' OR …)`` would let a prepared plan ignore the order of the indexes)."""
    return load(_SQL, "feed", **_arms(variant))


UNREAD = load(_SQL, "feed_unread", **_arms(_Variant(since=True)))


_MARK_SEEN = load(_SQL, "mark_seen")


def feed_page(
    human_id: int,
    filters: FeedFilters = FeedFilters(),
    after: Cursor | None = None,
    size: int = PAGE_SIZE,
    known: Mapping[Actor, str] | None = None,
) -> FeedPage:
    """One page of the human's feed, newest first, after ``after``: one query, or none when
    the filters can match nothing, and one more naming the page's actors when one is neither
    its todo's endpoint nor in ``known`` (the names the caller holds: the viewer's)."""
    if filters.matches_nothing:
        return FeedPage([], None)
    params: dict[str, Any] = {
        "scope_human_id": human_id,
        "size": size + 1,
        "endpoint": filters.endpoint,
        "queue": filters.queue,
        "kind": filters.kind,
        "outcome": filters.outcome,
    }
    if after is not None:
        params |= {
            "after_at": after.at,
            "after_kind": after.kind,
            "after_todo_id": after.todo_id,
            "after_seq": after.seq,
        }
    rows = fetch_all(statement(_Variant.of(filters, after=after is not None)), params)
    entries = _named([FeedEntry.from_row(row) for row in rows[:size]], known or {})
    more = len(rows) > size
    return FeedPage(entries, entries[-1].cursor if more else None)


def _named(entries: list[FeedEntry], known: Mapping[Actor, str]) -> list[FeedEntry]:
    """``entries`` with who acted as people read it: one read for the whole page."""
    if not entries:
        return entries
    names = actors.resolve(
        [e.actor_ref for e in entries],
        {**{Actor.endpoint(e.endpoint_id): e.endpoint_slug for e in entries}, **known},
    )
    # An ending names the lease's holder by the label its agent sent, else as people know it
    # ("operator alice", "endpoint ci"); a row names who acted.
    return [
        replace(
            e,
            actor_label=(e.claimant or names.holder(e.actor_ref))
            if e.kind == ATTEMPT_END
            else names.label(e.actor_ref),
        )
        for e in entries
    ]


def unread_since(human: Human) -> dt.datetime:
    """Where the human's unread entries start: when they last opened the feed, else when they
    joined. Their todos come from endpoints made after they joined, so for one who never
    opened the feed that is everything (bar an older endpoint staff moved to them in the
    admin: its earlier entries are in the feed but not in the count)."""
    return human.activity_seen_at or human.date_joined


def badge(count: int) -> str:
    """The rail's badge text for an unread count capped at ``UNREAD_CAP``: "" for none."""
    if count <= 0:
        return ""
    return f"{UNREAD_CAP - 1}+" if count >= UNREAD_CAP else str(count)


def unread_count(human_id: int, since: dt.datetime) -> int:
    """How many of the human's feed entries are newer than ``since``, counted up to
    ``UNREAD_CAP`` (one query)."""
    row = fetch_one(UNREAD, {"scope_human_id": human_id, "since": since, "size": UNREAD_CAP})
    return 0 if row is None else int(row["n"])


def mark_seen(human_id: int) -> dt.datetime | None:
    """Set the human's ``activity_seen_at`` to now and return it (None for an unknown human)."""
    row = fetch_one(_MARK_SEEN, {"human_id": human_id})
    return None if row is None else row["activity_seen_at"]
