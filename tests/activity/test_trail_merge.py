"""The trail's merge, as a table: entries in time order with the fixed tie-break, grouped by
attempt. Pure: no database.

Each case is written in seconds after a fixed instant. ``attempts`` are (seq, claimed, ended or
None); ``activity`` rows are (seq, at, kind, attempt_seq). The expected timeline is a list of
lone entries (``"created"``, ``"note#3"``) and groups (``("attempt 1", [...])``), each entry
shown as its kind, with ``#seq`` for activity rows and the attempt's seq for claims and ends.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from activity.trail import ActivityRow, Block, TimelineEntry, merge
from attempts.types import AttemptView
from todos.queries import TrailAttempt

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def at(seconds: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def attempt(
    seq: int, claimed: int, ended: int | None, heartbeat: int | None = None
) -> TrailAttempt:
    view = AttemptView(
        todo_id="td_aaaaaaaaaaaaaaaaaaaa",
        seq=seq,
        attempt=seq,
        claimer_kind="endpoint",
        claimer_endpoint_id=None,
        claimer_session=None,
        owner="agent-1",
        claimant=None,
        claimed_at=at(claimed),
        last_heartbeat_at=None if heartbeat is None else at(heartbeat),
        lease_expires_at=at(claimed + 300),
        ended_at=None if ended is None else at(ended),
        outcome=None if ended is None else "failed",
        disposition=None if ended is None else "retry_scheduled",
        summary=None,
        summary_truncated=False,
        artifact=None,
    )
    return TrailAttempt(view=view, notes_dropped=0)


def row(seq: int, seconds: int, kind: str = "note", attempt_seq: int | None = None) -> ActivityRow:
    return ActivityRow(
        seq=seq,
        attempt_seq=attempt_seq,
        at=at(seconds),
        kind=kind,
        actor_kind="endpoint",
        actor_ref="agent-1",
        actor_label=None,
        message=None,
        truncated=False,
        detail={},
    )


def label(entry: TimelineEntry) -> str:
    if entry.activity is not None:
        return f"{entry.kind}#{entry.activity.seq}"
    if entry.kind in ("claim", "end"):
        return f"{entry.kind} {entry.seq}"
    return entry.kind


def shape(blocks: tuple[Block, ...]) -> list[Any]:
    out: list[Any] = []
    for block in blocks:
        if block.group is not None:
            g = block.group
            name = f"attempt {g.seq}" + (" (pruned)" if g.pruned else "")
            name += "" if g.attempt is not None or g.pruned else " (not read)"
            members = [label(e) for e in g.entries] + ([label(g.end)] if g.end else [])
            out.append((name, members))
        else:
            assert block.entry is not None
            out.append(label(block.entry))
    return out


CASES: list[tuple[str, dict[str, Any], list[Any]]] = [
    ("a new todo is only its creation", {}, ["created"]),
    (
        "a webhook's event comes before the todo it created at the same instant",
        {"event_at": 0},
        ["event", "created"],
    ),
    (
        "an attempt groups its claim, its notes in order and its end",
        {
            "attempts": [(1, 10, 40)],
            "activity": [(2, 30, "note", 1), (1, 20, "note", 1)],
        },
        ["created", ("attempt 1", ["claim 1", "note#1", "note#2", "end 1"])],
    ),
    (
        "at one instant: claim, then the Board action that made it; the action, then the end",
        {
            "attempts": [(1, 10, 20)],
            "activity": [(2, 20, "human_action", 1), (1, 10, "human_action", 1)],
        },
        ["created", ("attempt 1", ["claim 1", "human_action#1", "human_action#2", "end 1"])],
    ),
    (
        "a takeover ends one attempt and opens the next at the same instant: two groups in order",
        {"attempts": [(2, 20, None), (1, 10, 20)]},
        ["created", ("attempt 1", ["claim 1", "end 1"]), ("attempt 2", ["claim 2"])],
    ),
    (
        "a retry after an attempt ended stands alone between the attempts",
        {
            "attempts": [(1, 10, 20), (2, 40, None)],
            "activity": [(1, 30, "human_action", 1), (2, 35, "retried", 1)],
        },
        [
            "created",
            ("attempt 1", ["claim 1", "end 1"]),
            "human_action#1",
            "retried#2",
            ("attempt 2", ["claim 2"]),
        ],
    ),
    (
        "rings stand alone, before the first claim and between attempts",
        {
            "attempts": [(1, 10, 20), (2, 40, None)],
            "activity": [(1, 5, "rung", None), (2, 30, "rung", 1)],
        },
        [
            "created",
            "rung#1",
            ("attempt 1", ["claim 1", "end 1"]),
            "rung#2",
            ("attempt 2", ["claim 2"]),
        ],
    ),
    (
        "a row naming no attempt stands alone even during one",
        {"attempts": [(1, 10, None)], "activity": [(1, 15, "a2a_state", None)]},
        ["created", ("attempt 1", ["claim 1"]), "a2a_state#1"],
    ),
    (
        "rows of a pruned attempt make an 'attempt N (pruned)' group where they happened",
        {
            "attempts": [(3, 50, None)],
            "pruned": 2,
            "activity": [(1, 12, "note", 1), (2, 14, "note", 1), (3, 32, "note", 2)],
        },
        [
            "created",
            ("attempt 1 (pruned)", ["note#1", "note#2"]),
            ("attempt 2 (pruned)", ["note#3"]),
            ("attempt 3", ["claim 3"]),
        ],
    ),
    (
        "a row naming an attempt neither pruned nor read still groups, not as pruned",
        {"attempts": [(6, 50, None)], "pruned": 2, "activity": [(1, 30, "note", 5)]},
        ["created", ("attempt 5 (not read)", ["note#1"]), ("attempt 6", ["claim 6"])],
    ),
    (
        "rows at one instant keep their seq order",
        {"activity": [(3, 5, "rung"), (1, 5, "rung"), (2, 5, "rung")]},
        ["created", "rung#1", "rung#2", "rung#3"],
    ),
    (
        "an open attempt has no end and keeps its notes",
        {"attempts": [(1, 10, None)], "activity": [(1, 100, "note", 1)]},
        ["created", ("attempt 1", ["claim 1", "note#1"])],
    ),
]


@pytest.mark.parametrize(("case", "given", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_merge(case: str, given: dict[str, Any], expected: list[Any]) -> None:
    blocks = merge(
        created_at=at(0),
        event_at=None if "event_at" not in given else at(given["event_at"]),
        attempts=[attempt(*a) for a in given.get("attempts", [])],
        activity=[row(*r) for r in given.get("activity", [])],
        attempts_pruned=given.get("pruned", 0),
    )

    assert shape(blocks) == expected


def test_an_attempt_group_carries_its_last_heartbeat_not_a_list() -> None:
    (_, block) = merge(created_at=at(0), attempts=[attempt(1, 10, None, heartbeat=70)], activity=[])

    assert block.group is not None and block.group.last_heartbeat_at == at(70)


def test_anchors_are_stable_per_entry() -> None:
    blocks = merge(
        created_at=at(0),
        event_at=at(0),
        attempts=[attempt(2, 10, 20)],
        activity=[row(7, 15, "note", 2)],
    )

    group = blocks[2].group
    assert group is not None and group.end is not None
    anchors = [b.entry.anchor for b in blocks[:2] if b.entry]
    anchors += [e.anchor for e in group.entries] + [group.end.anchor]
    assert anchors == ["event", "created", "attempt-2-claim", "activity-7", "attempt-2-end"]
