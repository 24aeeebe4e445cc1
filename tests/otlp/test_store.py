"""Storing spans (otlp/store.py): the upsert, the caps and their counters, concurrent batches,
and the read the trail page uses."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from django.db import connection, connections

from attempts.models import TodoAttempt
from otlp.models import TodoSpan, TodoSpanCount
from otlp.store import Stored, spans_for_todo, store
from otlp.translate import Row, collect, translate
from tests.base import Personas
from tests.otlp.helpers import SpanSpec, claimed_with_trace, request, trace_id
from todos import lifecycle
from todos.models import Todo


def rows(todo_id: str, n: int, seq: int = 1, trace: bytes | None = None) -> list[Row]:
    trace = trace or trace_id()
    specs = [
        SpanSpec(trace, name=f"s{i}", start_ns=1_700_000_000_000_000_000 + i * 1000)
        for i in range(n)
    ]
    return [translate(c, todo_id, seq, False) for c in collect(request(specs)).candidates]


def put(batch: list[Row], attempt_cap: int = 1000, todo_cap: int = 1000) -> Stored:
    return store(batch, set(), attempt_cap=attempt_cap, todo_cap=todo_cap)


@pytest.mark.django_db
def test_a_batch_is_stored_and_an_identical_retry_is_accepted_without_a_write(
    personas: Personas,
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    batch = rows(claim.todo.id, 3)

    first = put(batch)
    with connection.cursor() as cur:
        cur.execute("SELECT xmin::text FROM todo_spans ORDER BY name")
        versions = cur.fetchall()
    again = put(batch)
    with connection.cursor() as cur:
        cur.execute("SELECT xmin::text FROM todo_spans ORDER BY name")
        assert cur.fetchall() == versions

    assert first == again == Stored(3, 0, 0)
    assert TodoSpan.objects.filter(todo_id=claim.todo.id).count() == 3


@pytest.mark.django_db
def test_the_attempt_cap_refuses_new_spans_and_counts_them_on_the_attempt(
    personas: Personas,
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    batch = rows(claim.todo.id, 5)

    first = put(batch[:3], attempt_cap=4)
    second = put(batch, attempt_cap=4)  # three already stored, one fits, one over

    assert first == Stored(3, 0, 0)
    assert second == Stored(4, 1, 0)
    assert TodoSpan.objects.filter(todo_id=claim.todo.id).count() == 4
    attempt = TodoAttempt.objects.get(todo_id=claim.todo.id, seq=1)
    assert attempt.spans_dropped == 1
    assert Todo.objects.get(id=claim.todo.id).spans_dropped == 0


@pytest.mark.django_db
def test_a_trace_whose_spans_the_cap_refused_writes_no_binding(personas: Personas) -> None:
    from otlp.models import TodoTraceBinding

    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    todo_id = claim.todo.id
    kept_trace, refused_trace = trace_id(), trace_id()
    put(rows(todo_id, 1, trace=kept_trace))
    before = set(
        TodoTraceBinding.objects.filter(todo_id=todo_id).values_list("trace_id", flat=True)
    )

    stored = store(
        rows(todo_id, 2, trace=refused_trace),
        {(todo_id, refused_trace)},
        attempt_cap=1000,
        todo_cap=1,
    )

    assert stored.accepted == 0
    after = set(TodoTraceBinding.objects.filter(todo_id=todo_id).values_list("trace_id", flat=True))
    assert after == before and bytes(refused_trace) not in {bytes(t) for t in after}
    kept = store(
        rows(todo_id, 1, trace=kept_trace), {(todo_id, kept_trace)}, attempt_cap=1000, todo_cap=10
    )
    assert kept.accepted == 1
    assert TodoTraceBinding.objects.filter(todo_id=todo_id, trace_id=kept_trace).exists()


@pytest.mark.django_db
def test_the_todo_cap_counts_across_attempts_on_the_todo(personas: Personas) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    lifecycle.release(personas.endpoint_a.id, claim.todo.id, owner="endpoint:agent")
    lifecycle.claim(personas.endpoint_a.id, claim.todo.id, owner="endpoint:agent")

    put(rows(claim.todo.id, 3, seq=1), todo_cap=5)
    later = put(rows(claim.todo.id, 4, seq=2), todo_cap=5)

    assert later == Stored(2, 0, 2)
    assert Todo.objects.get(id=claim.todo.id).spans_dropped == 2
    assert TodoAttempt.objects.get(todo_id=claim.todo.id, seq=2).spans_dropped == 0


@pytest.mark.django_db
def test_a_span_sent_twice_in_one_batch_is_written_once_and_accepted_twice(
    personas: Personas,
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    (span,) = rows(claim.todo.id, 1)

    assert put([span, span]) == Stored(2, 0, 0)
    assert TodoSpan.objects.filter(todo_id=claim.todo.id).count() == 1


def span_counts(todo_id: str) -> dict[int, int]:
    """todo_span_counts of the todo: attempt (0: none) -> spans."""
    return {c.attempt_seq: c.spans for c in TodoSpanCount.objects.filter(todo_id=todo_id)}


@pytest.mark.django_db
def test_the_span_counts_follow_what_is_stored_per_attempt(personas: Personas) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    lifecycle.release(personas.endpoint_a.id, claim.todo.id, owner="endpoint:agent")
    lifecycle.claim(personas.endpoint_a.id, claim.todo.id, owner="endpoint:agent")
    first = rows(claim.todo.id, 3, seq=1)
    put(first)
    put(rows(claim.todo.id, 2, seq=2))
    put(rows(claim.todo.id, 1, seq=None))
    assert span_counts(claim.todo.id) == {0: 1, 1: 3, 2: 2}

    put(first)  # an exporter's retry: nothing written, nothing counted
    assert span_counts(claim.todo.id) == {0: 1, 1: 3, 2: 2}

    # Re-sent with a corrected end and bound to the second attempt: the count moves with it.
    moved = replace(first[0], end_us=first[0].end_us + 5, attempt_seq=2)
    assert put([moved]) == Stored(1, 0, 0)
    assert span_counts(claim.todo.id) == {0: 1, 1: 2, 2: 3}
    assert TodoSpan.objects.filter(todo_id=claim.todo.id).count() == 6


@pytest.mark.django_db
def test_the_caps_read_the_counts_not_the_spans(personas: Personas) -> None:
    # The count is what the caps hold to (docs/decisions/0042-span-counts-on-rows.md): spans
    # gone from the table (as retention drops a day) leave it, and the room, as it was.
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    put(rows(claim.todo.id, 4), attempt_cap=5)
    TodoSpan.objects.filter(todo_id=claim.todo.id).delete()

    assert put(rows(claim.todo.id, 3), attempt_cap=5) == Stored(1, 2, 0)
    assert span_counts(claim.todo.id) == {1: 5}


@pytest.mark.django_db
def test_spans_with_no_attempt_are_held_to_the_attempt_cap_among_themselves(
    personas: Personas,
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    put(rows(claim.todo.id, 2, seq=1), attempt_cap=3)

    assert put(rows(claim.todo.id, 4, seq=None), attempt_cap=3) == Stored(3, 1, 0)
    assert span_counts(claim.todo.id) == {0: 3, 1: 2}


@pytest.mark.django_db
def test_spans_for_todo_reads_each_attempt_in_start_order_with_its_count(
    personas: Personas,
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    batch = rows(claim.todo.id, 4)
    put(list(reversed(batch)))

    read = spans_for_todo(claim.todo.id, [1, 2], 3)

    assert list(read) == [1]
    assert [s.name for s in read[1].spans] == ["s0", "s1", "s2"] and read[1].total == 4
    assert read[1].spans[0].trace_id == batch[0].trace_id.hex()
    assert spans_for_todo(claim.todo.id, [], 3) == {}


@pytest.mark.django_db
def test_token_totals_sum_every_span_by_the_first_name_holding_a_whole_count(
    personas: Personas,
) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    trace = trace_id()
    counts: list[dict[str, Any]] = [
        {"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10},
        {"gen_ai.usage.prompt_tokens": 50, "gen_ai.usage.completion_tokens": 5},
        {"llm.token_count.prompt": 7, "llm.token_count.completion": 3},
        # The current name wins over the older ones; a string, a boolean, a fraction and a
        # negative number count nothing, so the next name is read.
        {"gen_ai.usage.input_tokens": 1, "llm.token_count.prompt": 1000},
        {"gen_ai.usage.input_tokens": "9", "gen_ai.usage.prompt_tokens": 2},
        {"gen_ai.usage.input_tokens": True, "gen_ai.usage.output_tokens": 2.5},
        {"gen_ai.usage.output_tokens": -4, "llm.token_count.completion": 3},
        {},
    ]
    specs = [
        SpanSpec(trace, name=f"s{i}", start_ns=1_700_000_000_000_000_000 + i, attributes=a)
        for i, a in enumerate(counts)
    ]
    put([translate(c, claim.todo.id, 1, False) for c in collect(request(specs)).candidates])

    # Only two spans are drawn; every one of the eight counts.
    (attempt,) = spans_for_todo(claim.todo.id, [1], 2).values()

    assert len(attempt.spans) == 2 and attempt.total == len(counts)
    assert (attempt.input_tokens, attempt.output_tokens) == (100 + 50 + 7 + 1 + 2, 10 + 5 + 3 + 3)


@pytest.mark.django_db
def test_token_totals_past_a_bigint_read_exactly(personas: Personas) -> None:
    # Each count fits OTLP's int64; their sum does not fit PostgreSQL's bigint.
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    trace = trace_id()
    specs = [
        SpanSpec(
            trace,
            name=f"s{i}",
            start_ns=1_700_000_000_000_000_000 + i,
            attributes={"gen_ai.usage.input_tokens": 2**62, "gen_ai.usage.output_tokens": 2},
        )
        for i in range(3)
    ]
    put([translate(c, claim.todo.id, 1, False) for c in collect(request(specs)).candidates])

    (attempt,) = spans_for_todo(claim.todo.id, [1], 10).values()

    assert (attempt.input_tokens, attempt.output_tokens) == (3 * 2**62, 6)


@pytest.mark.django_db
def test_the_spans_go_with_their_todo(personas: Personas) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    put(rows(claim.todo.id, 2))
    with connection.cursor() as cur:
        cur.execute("DELETE FROM todo_attempts WHERE todo_id = %s", [claim.todo.id])
        cur.execute("DELETE FROM todos WHERE id = %s", [claim.todo.id])

    assert not TodoSpan.objects.exists()


def _race(jobs: list[Callable[[], Stored]]) -> list[Stored]:
    """Run ``jobs`` at once, each on its own thread and connection."""
    barrier = threading.Barrier(len(jobs))
    results: list[Stored | BaseException] = [RuntimeError("not run")] * len(jobs)

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = jobs[i]()
        except BaseException as exc:  # surfaced below
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if isinstance(r, Stored)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_cannot_both_pass_the_cap(personas: Personas) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    batches = [rows(claim.todo.id, 6) for _ in range(4)]

    results = _race([lambda b=b: put(b, attempt_cap=10) for b in batches])

    assert sum(r.accepted for r in results) == 10
    assert sum(r.dropped for r in results) == 14
    assert TodoSpan.objects.filter(todo_id=claim.todo.id).count() == 10
    assert TodoAttempt.objects.get(todo_id=claim.todo.id, seq=1).spans_dropped == 14


@pytest.mark.django_db(transaction=True)
def test_a_batch_and_the_holders_transitions_do_not_deadlock(personas: Personas) -> None:
    claim = claimed_with_trace(personas.endpoint_a.id, trace_id())
    batch = rows(claim.todo.id, 50)

    def transitions() -> Stored:
        for _ in range(20):
            lifecycle.heartbeat(personas.endpoint_a.id, claim.todo.id, owner="endpoint:agent")
        lifecycle.complete(personas.endpoint_a.id, claim.todo.id, owner="endpoint:agent")
        return Stored(0, 0, 0)

    _race([lambda: put(batch, attempt_cap=30, todo_cap=40), transitions])

    assert Todo.objects.get(id=claim.todo.id).state == "completed"
    assert TodoSpan.objects.filter(todo_id=claim.todo.id).count() == 30
