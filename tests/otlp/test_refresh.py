"""New spans refresh an open trail page: the store announces them at commit (one ``spans``
change per todo it wrote spans for), the refresh passes each todo on at most once a second,
and the push redraws the open attempt's waterfall."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from activity import live
from otlp import refresh
from otlp.store import store
from otlp.translate import collect, translate
from switchboard.lib import changefeed
from switchboard.lib.changefeed import Change
from tests.base import Personas
from tests.concurrency.harness import raw_connection
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, trace_id


@pytest.fixture
def passed_on(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The todos the refresh passes on, with this test's consumer the feed's only one."""
    got: list[str] = []
    feed = changefeed.Feed()

    def consumer(change: Change) -> None:
        if change.kind == changefeed.SPANS_DUE:
            got.append(change.todo_id)

    feed.subscribe(consumer)
    monkeypatch.setattr(changefeed, "FEED", feed)
    monkeypatch.setattr(refresh, "_last", {})
    monkeypatch.setattr(refresh, "_pending", set())
    return got


def _spans(todo_id: str) -> Change:
    return Change(kind=changefeed.SPANS, todo_id=todo_id, endpoint_id=uuid.uuid4())


def test_a_burst_of_batches_is_passed_on_now_and_once_more_a_second_later(
    passed_on: list[str],
) -> None:
    async def burst() -> None:
        refresh.heard(_spans("td_a"))
        refresh.heard(_spans("td_b"))
        refresh.heard(_spans("td_a"))  # within the second: one timer
        refresh.heard(_spans("td_a"))  # still the same timer
        refresh.heard(Change(kind=changefeed.CHANGED, todo_id="td_c"))  # not spans: ignored
        assert sorted(passed_on) == ["td_a", "td_b"]
        await asyncio.sleep(refresh.INTERVAL_SECONDS + 0.3)

    asyncio.run(burst())
    assert sorted(passed_on) == ["td_a", "td_a", "td_b"]


@pytest.mark.django_db(transaction=True)
def test_the_store_announces_each_todo_it_wrote_spans_for_once_at_commit(
    personas: Personas,
) -> None:
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    specs = [SpanSpec(trace, name=f"step {n}") for n in range(3)]
    rows = [
        translate(c, claim.todo.id, claim.attempt_seq, False)
        for c in collect(request(specs)).candidates
    ]
    # The claim's own announcement leaves after its commit, from the announcer's thread: sent
    # before the listener starts, so the listener hears only the store's.
    assert changefeed.ANNOUNCER.flush()
    with raw_connection(autocommit=True) as listener:
        listener.execute(f"LISTEN {changefeed.CHANNEL}")
        store(rows, set(), attempt_cap=100, todo_cap=100)
        notes = [json.loads(n.payload) for n in listener.notifies(timeout=2.0, stop_after=2)]
        assert notes == [
            {
                "kind": "spans",
                "todo_id": claim.todo.id,
                "endpoint_id": str(personas.endpoint_a.id),
                "queue": claim.todo.queue,
                "state": "claimed",
            }
        ]
        # The same batch again writes nothing (the spans are unchanged): nothing to redraw.
        store(rows, set(), attempt_cap=100, todo_cap=100)
        assert list(listener.notifies(timeout=0.5, stop_after=1)) == []


@pytest.mark.django_db
def test_the_trail_push_redraws_the_open_attempts_waterfall(personas: Personas) -> None:
    trace = trace_id()
    claim = claimed_with_trace(personas.endpoint_a.id, trace)
    specs = [SpanSpec(trace, name="chat claude", attributes={"gen_ai.operation.name": "chat"})]
    rows = [
        translate(c, claim.todo.id, claim.attempt_seq, False)
        for c in collect(request(specs)).candidates
    ]
    store(rows, set(), attempt_cap=100, todo_cap=100)
    watermark = live.Watermark(claim.todo.id, 0, claim.attempt_seq, True)

    push = live.trail_push(personas.alice.id, watermark, None)

    assert push is not None
    assert f'id="waterfall-{claim.todo.id}-{claim.attempt_seq}" hx-swap-oob="true"' in push
    assert 'class="sb-bar sb-cat-llm"' in push
