"""New spans refresh an open trail page: announced after commit, at most once per todo a second,
and the push redraws the open attempt's waterfall."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from activity import live
from otlp import refresh
from otlp.store import store
from otlp.translate import collect, translate
from tests.base import Personas
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, trace_id
from todos import events


@pytest.fixture
def heard(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The todos announced, with this test's listener the only one (not the Board's relay)."""
    got: list[str] = []

    def listener(todo_id: str, endpoint_id: Any, state: str) -> None:
        got.append(todo_id)

    monkeypatch.setattr(events, "_listeners", [listener])
    monkeypatch.setattr(refresh, "_last", {})
    return got


@pytest.mark.django_db(transaction=True)
def test_a_burst_of_batches_is_announced_now_and_once_more_a_second_later(
    heard: list[str],
) -> None:
    endpoint = uuid.uuid4()

    refresh.spans_stored(endpoint, ["td_a", "td_b"])
    refresh.spans_stored(endpoint, ["td_a"])  # within the second: one timer
    refresh.spans_stored(endpoint, ["td_a"])  # still the same timer

    assert sorted(heard) == ["td_a", "td_b"]
    time.sleep(refresh.INTERVAL_SECONDS + 0.3)
    assert sorted(heard) == ["td_a", "td_a", "td_b"]


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
