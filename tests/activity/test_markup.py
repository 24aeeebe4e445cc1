"""The trail page's Python-built markup (activity/markup.py), beside its twins.

Three kinds of check:

- ``framed`` frames an entry exactly as the template's ``trail_entry`` partial frames the
  delivery and the creation: both rendered on the same entries, compared byte for byte.
- A live push draws what the first paint drew: through real transitions, at each step of a
  todo's life (open and closed attempts, notes, a question, every kind of activity row, hostile
  text), every entry of a socket's live container, and the open attempt's head, heartbeat line
  and waterfall, the state badge and the facts it swaps in out of band, appear in the trail
  page's HTML verbatim (less ``hx-swap-oob``).
- Golden copies (tests/golden/) of every builder's output on a fixed trail, so a change to the
  HTML fails until the copy is rewritten on purpose.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any
from unittest import mock
from uuid import UUID

import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from activity import live
from activity.markup import (
    attempt_head_html,
    attempt_heartbeat_html,
    attempt_waterfall_html,
    framed,
    trail_blocks,
    trail_rows,
)
from activity.trail import CLAIM, END, ActivityRow, TimelineEntry, Trail, merge
from attempts.types import AttemptView
from otlp.types import AttemptSpans, SpanView
from otlp.waterfall import build_waterfall
from switchboard.actors import Names
from switchboard.lib.actors import Actor
from switchboard.models import Endpoint
from tests.activity.helpers import agent_note, board, rung
from tests.base import Personas
from tests.golden import assert_golden
from tests.reach import BOT, expire_lease, make_retry_due, new_todo
from todos import lifecycle
from todos.models import Todo
from todos.queries import TrailAttempt

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
ZONE = "Europe/Berlin"  # not UTC, so a time drawn in the wrong zone shows
HOSTILE = "<script>alert('x')</script> & \"quoted\""
EP = UUID("00000000-0000-4000-8000-00000000000a")


def at(seconds: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


# --- framed, beside the trail_entry partial ----------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    [
        TimelineEntry(at(5), CLAIM, 1, 1),
        TimelineEntry(at(65), END, 2, 2),
        TimelineEntry(at(3599), "note", 7, None),
        TimelineEntry(at(0), '"><b>kind</b>', 3, None),
    ],
    ids=["claim", "end", "note", "hostile-kind"],
)
def test_framed_frames_an_entry_as_the_trail_entry_partial_does(entry: TimelineEntry) -> None:
    # The partial draws nothing inside the frame for a kind other than the delivery and the
    # creation, so its output is the frame alone: framed around nothing must equal it.
    with timezone.override(ZONE):
        partial = render_to_string("todos/todo_detail.html#trail_entry", {"entry": entry})
        built = framed(entry, "", timezone.get_current_timezone())

    assert built == partial
    assert "13:" in built  # the stamp is in the current zone, not UTC


# --- a live push, beside the first paint ---------------------------------------------------------

_ENTRY = re.compile(r'(?=<div class="trail-entry )')
_LIVE = re.compile(r'<div id="sb-trail-live-[^"]*" class="trail-live" hx-swap-oob="outerHTML">')


@pytest.fixture
def frozen() -> Iterator[None]:
    """One instant for Python's clock (durations "so far" are drawn from it), the same for the
    page and the push (PostgreSQL's clock moves on), in a zone other than UTC."""
    instant = timezone.now()
    with mock.patch("django.utils.timezone.now", return_value=instant), timezone.override(ZONE):
        yield


def _page(client: Client, todo_id: str) -> str:
    response = client.get(reverse("todo_detail", args=[todo_id]))
    assert response.status_code == 200
    return response.content.decode()


def _push(human_id: int, todo_id: str, attempt: int, *, open_: bool) -> str:
    watermark = live.Watermark(todo_id=todo_id, seq=0, attempt=attempt, open=open_)
    html = live.trail_push(human_id, watermark, None)
    assert html is not None
    return html


def _live_entries(push: str) -> list[str]:
    """The entries of a push's live container, one string each."""
    match = _LIVE.search(push)
    assert match is not None, push
    inner = push[match.end() : push.index("</div>\n<span id=", match.end())]
    return [part for part in _ENTRY.split(inner) if part]


def _open_parts(push: str, todo_id: str, seq: int) -> list[str]:
    """The open attempt's head, heartbeat line and waterfall a push swaps in, as the page drew
    them (without the out-of-band attribute)."""
    head = push.index(f'<div class="head" id="attempt-{seq}-head"')
    heartbeat = push.index(f'<div class="trail-entry trail-heartbeat" id="attempt-{seq}-heartbeat"')
    waterfall = push.index(f'<div class="waterfall" id="waterfall-{todo_id}-{seq}"')
    # The live_push partial joins the three with a newline.
    parts = [push[head : heartbeat - 1], push[heartbeat : waterfall - 1], push[waterfall:]]
    return [part.replace(' hx-swap-oob="true"', "") for part in parts]


def _same_as_first_paint(client: Client, human_id: int, todo_id: str, open_seq: int) -> int:
    """Assert that everything a push draws is drawn by the first paint, verbatim; the number
    of entries compared."""
    page = _page(client, todo_id)
    push = _push(human_id, todo_id, 0, open_=False)
    entries = _live_entries(push)
    for entry in entries:
        assert entry in page, f"the push draws an entry the page does not:\n{entry}"
    for name in ("trail_state", "trail_facts"):
        first = render_to_string(f"todos/todo_detail.html#{name}", {"todo": _todo(todo_id)})
        assert first in page
    if open_seq:
        for part in _open_parts(_push(human_id, todo_id, open_seq, open_=True), todo_id, open_seq):
            assert part in page, f"the push swaps in a part the page does not draw:\n{part}"
    return len(entries)


def _todo(todo_id: str) -> Todo:
    return Todo.objects.select_related("endpoint").get(id=todo_id)


@pytest.mark.django_db
@pytest.mark.usefixtures("frozen")
def test_a_live_push_draws_every_entry_as_the_first_paint_did(
    alice_client: Client, personas: Personas
) -> None:
    endpoint, alice = personas.endpoint_a.id, personas.alice.id
    todo_id = new_todo(endpoint, "work", title=HOSTILE, max_attempts=4).id
    rung(todo_id, subscribers=2)
    seen = [_same_as_first_paint(alice_client, alice, todo_id, 0)]

    # An agent's attempt, open, with notes, one of them hostile.
    lifecycle.claim(endpoint, todo_id, owner=BOT, claimant=HOSTILE)
    agent_note(endpoint, todo_id, BOT, HOSTILE)
    agent_note(endpoint, todo_id, BOT, "plain progress")
    seen.append(_same_as_first_paint(alice_client, alice, todo_id, 1))

    # It fails with a summary and an artifact; the sweeper retries it.
    lifecycle.fail(
        endpoint,
        todo_id,
        owner=BOT,
        summary=HOSTILE,
        artifact="https://ci.example/run?a=1&b=<2>",
        retryable=True,
    )
    make_retry_due(todo_id)
    assert todo_id in lifecycle.requeue_due_retries()
    seen.append(_same_as_first_paint(alice_client, alice, todo_id, 0))

    # A second attempt asks a question over A2A; a human answers it from the Board.
    lifecycle.claim(endpoint, todo_id, owner=BOT)
    lifecycle.interrupt(
        endpoint, todo_id, owner=BOT, state="input-required", input_request={"question": HOSTILE}
    )
    seen.append(_same_as_first_paint(alice_client, alice, todo_id, 2))
    lifecycle.resume(alice, todo_id, response={"text": HOSTILE, "from": "human:alice"})
    seen.append(_same_as_first_paint(alice_client, alice, todo_id, 2))

    # Its lease lapses and the reaper takes it back; an operator claims and completes it.
    expire_lease(todo_id)
    lifecycle.reap()
    board(alice, "claim", todo_id)
    seen.append(_same_as_first_paint(alice_client, alice, todo_id, 3))
    board(alice, "complete", todo_id, HOSTILE)
    seen.append(_same_as_first_paint(alice_client, alice, todo_id, 0))

    # Every step compared something, and more as the trail grew.
    assert seen[0] >= 1 and seen == sorted(seen) and seen[-1] >= 10, seen


# --- golden copies ------------------------------------------------------------------------------


def _view(seq: int, claimed: int, ended: int | None, **fields: Any) -> AttemptView:
    values: dict[str, Any] = {
        "todo_id": "td_golden",
        "seq": seq,
        "attempt": seq,
        "claimer_kind": "endpoint",
        "claimer_endpoint_id": EP,
        "claimer_session": None,
        "owner": "bot-1",
        "claimant": None,
        "claimed_at": at(claimed),
        "last_heartbeat_at": None,
        "lease_expires_at": at(claimed + 300),
        "ended_at": None if ended is None else at(ended),
        "outcome": None,
        "disposition": None,
        "summary": None,
        "summary_truncated": False,
        "artifact": None,
    }
    return AttemptView(**(values | fields))


def _row(seq: int, seconds: int, kind: str, attempt_seq: int | None, **fields: Any) -> ActivityRow:
    values: dict[str, Any] = {
        "seq": seq,
        "attempt_seq": attempt_seq,
        "at": at(seconds),
        "kind": kind,
        "actor_kind": "endpoint",
        "actor_ref": "bot-1",
        "actor_label": None,
        "message": None,
        "truncated": False,
        "detail": {},
    }
    return ActivityRow(**(values | fields))


def _span(span: int, name: str, start: float, seconds: float, **fields: Any) -> SpanView:
    values: dict[str, Any] = {
        "trace_id": "0" * 31 + "1",
        "span_id": f"{span:016x}",
        "parent_span_id": None,
        "name": name,
        "category": "llm",
        "tool": None,
        "status_code": "ok",
        "start_at": at(0) + dt.timedelta(seconds=start),
        "end_at": at(0) + dt.timedelta(seconds=start + seconds),
    }
    return SpanView(**(values | fields))


def _todo_object(**fields: Any) -> Todo:
    endpoint = Endpoint(id=EP, slug="agent-a", name="Alice's agent")
    values: dict[str, Any] = {
        "id": "td_golden",
        "title": HOSTILE,
        "queue": "work",
        "max_attempts": 5,
        "created_at": at(0),
        "attempts_total": 3,
        "attempts_pruned": 0,
    }
    return Todo(endpoint=endpoint, **(values | fields))


def _trail(
    todo: Todo, attempts: list[TrailAttempt], activity: list[ActivityRow], **waterfalls: Any
) -> Trail:
    return Trail(
        todo=todo,
        event=None,
        attempts=tuple(sorted(attempts, key=lambda a: -a.view.seq)),
        activity=tuple(activity),
        blocks=merge(
            created_at=todo.created_at,
            attempts=attempts,
            activity=activity,
            attempts_pruned=todo.attempts_pruned,
        ),
        activity_truncated=False,
        waterfalls={int(seq.removeprefix("a")): w for seq, w in waterfalls.items()},
        names=Names({Actor.human(1): "alice"}),
    )


def _full_trail() -> Trail:
    """Three attempts (failed, completed by an operator, open) and every kind of activity row,
    with hostile text wherever stored text lands."""
    failed = TrailAttempt(
        _view(
            1,
            10,
            100,
            claimant=HOSTILE,
            last_heartbeat_at=at(40),
            outcome="failed",
            disposition="retry_scheduled",
            summary=HOSTILE,
            summary_truncated=True,
            artifact="https://ci.example/run?a=1&b=<2>",
        ),
        notes_dropped=2,
    )
    completed = TrailAttempt(
        _view(
            2,
            200,
            260,
            claimer_kind="owner",
            claimer_endpoint_id=None,
            owner="human:1",
            outcome="completed",
            disposition="done",
            artifact="javascript:alert(1)",
            spans_dropped=1,
        ),
        notes_dropped=1,
    )
    open_ = TrailAttempt(
        _view(3, 400, None, last_heartbeat_at=at(450), owner="bot-1"),
        notes_dropped=0,
    )
    activity = [
        _row(1, 30, "note", 1, message=HOSTILE, truncated=True),
        _row(
            2,
            150,
            "retried",
            None,
            actor_kind="system",
            actor_ref="sweeper",
            detail={"from": "failed", "to": "pending"},
        ),
        _row(
            3, 160, "rung", 1, actor_kind="system", actor_ref="doorbell", detail={"subscribers": 3}
        ),
        _row(
            4,
            200,
            "human_action",
            2,
            actor_kind="human",
            actor_ref="human:1",
            actor_label="alice",
            detail={"action": "claim", "from": "pending", "to": "claimed"},
        ),
        _row(
            5,
            300,
            "human_action",
            None,
            actor_kind="human",
            actor_ref="human:9",
            detail={"action": "extend", "reason": HOSTILE},
        ),
        _row(
            6,
            420,
            "a2a_state",
            3,
            message=HOSTILE,
            detail={"action": "interrupt", "from": "claimed", "to": "input-required"},
        ),
        _row(
            7,
            430,
            "human_action",
            3,
            actor_kind="human",
            actor_ref=HOSTILE,
            detail={"action": HOSTILE, "from": HOSTILE, "to": "pending"},
        ),
    ]
    spans = AttemptSpans(
        spans=[
            _span(1, "invoke_agent fixer", 0, 10, category="agent"),
            _span(
                2,
                HOSTILE,
                2,
                4,
                parent_span_id=f"{1:016x}",
                tool=HOSTILE,
                status_code="error",
                category="tool",
            ),
            _span(3, "chat claude", 6, 0.0004, parent_span_id=f"{1:016x}"),
        ],
        total=4,
        input_tokens=1200,
        output_tokens=300,
    )
    one = AttemptSpans(spans=[_span(4, "only", 1, 0)], total=1)
    return _trail(
        _todo_object(),
        [failed, completed, open_],
        activity,
        a1=build_waterfall(spans, 2),
        a3=build_waterfall(one, 10),
    )


def _gone_trail() -> Trail:
    """Groups without their attempt: one pruned (its notes remain), one older than the read,
    and a reaped attempt."""
    reaped = TrailAttempt(
        _view(3, 400, 700, outcome="reaped", disposition="requeued"),
        notes_dropped=0,
    )
    activity = [
        _row(1, 30, "note", 1, message="kept after the prune"),
        _row(2, 230, "note", 2, message="older than the page reads"),
    ]
    return _trail(_todo_object(attempts_pruned=1), [reaped], activity)


def _blocks(trail: Trail, now: dt.datetime) -> str:
    rows = trail_rows(trail, now)
    out = []
    for html, entry in trail_blocks(trail, rows):
        out.append(str(html) if html else f"<!-- template: {entry.kind if entry else '?'} -->")
    return "\n".join(out)


def test_the_trail_builders_draw_their_golden_copy() -> None:
    now = at(500)
    full, gone = _full_trail(), _gone_trail()
    with timezone.override(ZONE):
        tz = timezone.get_current_timezone()
        rows = trail_rows(full, now)
        open_group = next(b.group for b in full.blocks if b.group and b.group.seq == 3)
        sections = {
            "a trail: three attempts and every kind of row": _blocks(full, now),
            "the open attempt, out of band": "\n".join(
                [
                    attempt_head_html(open_group, rows[3], full.todo.max_attempts, oob=True),
                    attempt_heartbeat_html(open_group, tz, oob=True),
                    attempt_waterfall_html(full, open_group, rows[3], oob=True),
                ]
            ),
            "groups without their attempt": _blocks(gone, now),
        }
    text = "".join(f"<!-- {name} -->\n{html}\n" for name, html in sections.items())

    assert HOSTILE not in text and "<script>" not in text  # nothing stored lands unescaped
    assert_golden("activity_trail.html", text)
