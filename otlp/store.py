"""The only writer of ``todo_spans`` and ``todo_trace_bindings``; the read of a todo's spans.

``store`` writes one request's bound spans in one transaction, acknowledged (by the receiver)
only after it commits: lock, count, decide, write. The commit does not wait for its WAL to reach
the disk (``synchronous_commit`` off for this transaction only): a database crash may lose the
last fraction of a second of acknowledged spans, and in exchange span ingest cannot stall the
lifecycle's commits (docs/decisions/0010-spans-commit-asynchronously.md).

The caps
--------
A todo keeps at most ``spans_max_per_todo`` spans and an attempt at most
``spans_max_per_attempt`` (runtime settings). Spans past a cap are not stored; they are counted
on the attempt (``todo_attempts.spans_dropped``) or the todo (``todos.spans_dropped``). This
module writes those two counters with its own SQL, and the attempt's count of spans stored
(``todo_attempts.spans_stored``, which span retention and forgetting never lower, so the trail
can say what they removed): the lifecycle (``todos.lifecycle``) is the writer of todos and
attempts in every other respect, and a count of spans is the receiver's to keep
(docs/architecture.md, the writes table). The caps read ``todo_span_counts``, one row per todo
and attempt that the same statement keeps (a span written adds one, the stored copy it replaced
takes one back), so a batch's count does not grow with the spans its todo holds
(docs/decisions/0042-span-counts-on-rows.md). They count every span the todo stored: span
retention drops whole days of spans (``otlp/partitions.py``) and leaves the counts as they are.

Concurrency argument
--------------------
Two batches for one todo must not both pass a cap, nor both store a span they both carry:
``todo_spans`` is partitioned by ``received_at``, so no unique index on the span's key alone
can refuse the second copy (docs/decisions/0040-span-partitions.md). So each batch first takes
a transaction-level advisory lock per todo it binds to (``sql/lock.sql``: keyed by the todo
id's hash, in key order, so two batches never wait on each other in a cycle), then locks, ``FOR
UPDATE``, the newest attempt row of each of those todos (in todo order), then reads the counts
and finds the spans already stored (``sql/counts.sql``, a new statement: in READ COMMITTED its
snapshot is taken after the locks were granted and sees every batch that committed before),
then writes, a re-sent span over its stored copy. Every batch for a todo takes the same
advisory lock, with or without an attempt, whichever attempt its spans belong to, so
everything it counts and writes for the todo is serialised. Only batches take these locks.

Why the attempt row and nothing else: the lifecycle locks a todo's row before its attempt rows
(every transition's attempt arm joins the updated todo). This transaction never locks a todo
row, so it never holds what a transition holds while waiting for what the transition holds: a
transition may wait for a batch (milliseconds), never the other way round in a cycle. The foreign
keys to ``todos`` take KEY SHARE, which no transition's UPDATE conflicts with. For the same
reason the per-todo drop counter (a todo row) is bumped after the batch commits, in a statement
of its own (``sql/todo_dropped.sql``): the batch's row locks are gone by then. A crash between
the two loses that count, never a span.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction

from otlp.translate import Row
from otlp.types import AttemptSpans, SpanView
from switchboard.lib.sql import fetch_all, fetch_tuples, load

_SQL = Path(__file__).parent / "sql"
# The first half of a batch's per-todo advisory lock (sql/lock.sql): the two-integer form, so
# it never meets a sweep's one-bigint session lock (todos/sweeps.py, otlp/partitions.py).
LOCK_CLASS = 0x5B_0203
LOCK = load(_SQL, "lock")
COUNTS = load(_SQL, "counts")
STORE = load(_SQL, "store")
TODO_DROPPED = load(_SQL, "todo_dropped")
ROLLUP = load(_SQL, "rollup")
SPANS_FOR_TODO = load(_SQL, "spans_for_todo")
FORGET = load(_SQL, "forget")
REFUSALS = load(_SQL, "refusals")

Key = tuple[str, bytes, bytes]


@dataclass(frozen=True, slots=True)
class Stored:
    """How a batch's bound spans fared: stored (new, updated or unchanged) or over a cap."""

    accepted: int
    dropped_attempt_cap: int
    dropped_todo_cap: int
    # Todos the batch's usage took to or past their max_cost_usd (rollup.sql).
    over_cap: tuple[str, ...] = ()

    @property
    def dropped(self) -> int:
        return self.dropped_attempt_cap + self.dropped_todo_cap


def _key(row: Row) -> Key:
    return (row.todo_id, row.trace_id, row.span_id)


@dataclass(slots=True)
class _Decision:
    keep: list[Row]
    attempt_drops: Counter[tuple[str, int | None]]
    todo_drops: Counter[str]
    # The received_at of each kept span's stored copy: the store writes it over that copy.
    stored_at: dict[Key, dt.datetime]


def _decide(
    rows: Sequence[Row],
    counts: Sequence[dict[str, Any]],
    attempt_cap: int,
    todo_cap: int,
) -> _Decision:
    """Which rows to write, in batch order, given what is stored: a span already stored costs
    no cap; a new one is refused once its attempt, or its todo, holds its cap."""
    per_attempt: Counter[tuple[str, int | None]] = Counter()
    per_todo: Counter[str] = Counter()
    stored: dict[Key, dt.datetime] = {}
    for count in counts:
        if count["what"] == "count":
            per_attempt[(count["todo_id"], count["attempt_seq"])] += count["n"]
            per_todo[count["todo_id"]] += count["n"]
        else:
            key = (count["todo_id"], bytes(count["trace_id"]), bytes(count["span_id"]))
            stored[key] = count["received_at"]
    decision = _Decision([], Counter(), Counter(), stored)
    for row in rows:
        if _key(row) not in stored:
            attempt = (row.todo_id, row.attempt_seq)
            if per_attempt[attempt] >= attempt_cap:
                decision.attempt_drops[attempt] += 1
                continue
            if per_todo[row.todo_id] >= todo_cap:
                decision.todo_drops[row.todo_id] += 1
                continue
            per_attempt[attempt] += 1
            per_todo[row.todo_id] += 1
        decision.keep.append(row)
    return decision


def _spans(rows: Sequence[Row], stored_at: dict[Key, dt.datetime]) -> str:
    """The rows as store.sql's ``spans`` parameter: one JSON array, a span an array of columns."""
    out = []
    for r in rows:
        received = stored_at.get(_key(r))
        out.append(
            (
                r.todo_id,
                r.trace_id.hex(),
                r.span_id.hex(),
                None if r.parent_span_id is None else r.parent_span_id.hex(),
                r.attempt_seq,
                r.name,
                r.kind,
                r.category,
                r.tool,
                r.status_code,
                r.status_message,
                r.service_name,
                r.start_us,
                r.end_us,
                r.attributes,
                r.truncated,
                r.model,
                r.input_tokens,
                r.output_tokens,
                r.cache_read_tokens,
                r.cache_write_tokens,
                r.reasoning_tokens,
                None if r.cost_usd is None else str(r.cost_usd),
                None if received is None else received.isoformat(),
            )
        )
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def _kept_plans() -> bool:
    """Whether this process prepares its statements (not behind a transaction pooler:
    switchboard/settings.py, docs/decisions/0041-behind-a-transaction-pooler.md)."""
    return settings.DATABASES["default"]["OPTIONS"].get("prepare_threshold") is not None


def roll_up(changes: Sequence[Sequence[Any]]) -> tuple[str, ...]:
    """Add a committed batch's usage changes (store.sql's ``changes``) to its todos and to
    usage_hours, in a transaction of its own; the todos now at or past their cost cap.

    A crash between the batch's commit and this one loses these additions (never a span):
    ``manage.py reprice`` rebuilds every total from the spans."""
    if not changes:
        return ()
    changes = sorted(changes, key=lambda c: (c[0], c[1]))
    # One statement, its own transaction (autocommit): rollup.sql locks in id order itself.
    rows = fetch_all(
        ROLLUP,
        {
            "todo_ids": [c[0] for c in changes],
            "hours": [c[1] for c in changes],
            "inputs": [c[2] for c in changes],
            "outputs": [c[3] for c in changes],
            "cache_reads": [c[4] for c in changes],
            "cache_writes": [c[5] for c in changes],
            "reasonings": [c[6] for c in changes],
            "unpriced": [c[7] for c in changes],
            "costs": [c[8] for c in changes],
        },
    )
    return tuple(r["todo_id"] for r in rows)


def store(
    rows: Sequence[Row],
    new_bindings: set[tuple[str, bytes]],
    *,
    attempt_cap: int,
    todo_cap: int,
) -> Stored:
    """Write a batch's bound spans and bindings in one transaction; count what the caps refused.

    A key sent twice in one batch is written once (the last copy) and counted accepted twice:
    the exporter sent the same span twice, and it is stored.
    """
    if not rows:
        return Stored(0, 0, 0)
    latest: dict[Key, Row] = {}
    copies: Counter[Key] = Counter()
    for row in rows:
        latest[_key(row)] = row
        copies[_key(row)] += 1
    unique = list(latest.values())
    todo_ids = sorted({r.todo_id for r in unique})
    with transaction.atomic():
        # Its first statement: it also sets the commit not to wait for the WAL flush (telemetry
        # must not make the lifecycle's commits queue behind its WAL: docs/decisions/
        # 0010-spans-commit-asynchronously.md) and the generic plans (sql/lock.sql).
        (locked,) = fetch_all(
            LOCK, {"lock_class": LOCK_CLASS, "todo_ids": todo_ids, "kept_plans": _kept_plans()}
        )
        counts = fetch_all(
            COUNTS,
            {
                "todo_ids": todo_ids,
                # A value, not a subquery: the probes then read only the days since the todos
                # were created, pruned as the statement starts (docs/decisions/0040 and 0042).
                "since": locked["since"],
                "keys": json.dumps(
                    [(r.todo_id, r.trace_id.hex(), r.span_id.hex()) for r in unique]
                ),
            },
        )
        decision = _decide(unique, counts, attempt_cap, todo_cap)
        # A binding is kept only with a span stored for it: a trace whose spans the caps all
        # refused binds nothing (its later spans would be refused at the same cap anyway).
        kept = {(r.todo_id, r.trace_id) for r in decision.keep}
        bindings = sorted(b for b in new_bindings if b in kept)
        attempt_drops = [(k, n) for k, n in decision.attempt_drops.items() if k[1] is not None]
        written = fetch_all(
            STORE,
            {
                "spans": _spans(decision.keep, decision.stored_at),
                "resent": bool(decision.stored_at),
                "binding_todos": [todo for todo, _ in bindings],
                "binding_traces": [trace for _, trace in bindings],
                "drop_todos": [k[0] for k, _ in attempt_drops],
                "drop_seqs": [k[1] for k, _ in attempt_drops],
                "drop_counts": [n for _, n in attempt_drops],
            },
        )
    over_cap = roll_up(written[0]["changes"] or ())
    if decision.todo_drops:
        todos = sorted(decision.todo_drops)
        fetch_all(
            TODO_DROPPED,
            {"drop_todos": todos, "drop_counts": [decision.todo_drops[t] for t in todos]},
        )
    accepted = sum(copies[_key(row)] for row in decision.keep)
    dropped_todo = sum(decision.todo_drops.values())
    return Stored(
        accepted=accepted,
        dropped_attempt_cap=len(rows) - accepted - dropped_todo,
        dropped_todo_cap=dropped_todo,
        over_cap=over_cap,
    )


def record_refusals(endpoint_id: UUID, *, unbound: int, over_cap: int, invalid: int) -> None:
    """Count one request's refused spans in its endpoint's ``span_refusals`` row for this minute
    (one statement, which also prunes the endpoint's rows past two days); nothing when none was
    refused, so a clean export costs no write. Its own short transaction after the spans', so a
    refusal is counted even when no span bound."""
    if unbound + over_cap + invalid == 0:
        return
    fetch_all(
        REFUSALS,
        {"endpoint_id": endpoint_id, "unbound": unbound, "over_cap": over_cap, "invalid": invalid},
    )


def spans_for_todo(
    todo_id: str,
    seqs: Sequence[int],
    per_attempt: int,
    since: dt.datetime | None = None,
) -> dict[int, AttemptSpans]:
    """For each attempt in ``seqs`` that holds spans: its first ``per_attempt`` spans, oldest
    start first, how many it holds and its token totals (one query, for the trail page's
    waterfalls). ``since``, the todo's creation, spares the read the partitions of the days
    before it (none of its spans can be there); None reads them all.

    Unscoped: it trusts ``todo_id``. Call it only with the id of a todo that an owner-scoped
    read (``todos.queries``) has just returned to the same caller.
    """
    out: dict[int, AttemptSpans] = {}
    if not seqs:
        return out
    # Tuples, not dicts: thousands of rows (otlp/sql/spans_for_todo.sql gives their order).
    rows = fetch_tuples(
        SPANS_FOR_TODO,
        {"todo_id": todo_id, "seqs": list(seqs), "per_attempt": per_attempt, "since": since},
    )
    spans: list[SpanView] = []
    for seq, total, input_tokens, output_tokens, *span in rows:
        if seq not in out:
            spans = []
            out[seq] = AttemptSpans(spans, int(total), int(input_tokens), int(output_tokens))
        spans.append(SpanView(*span))
    return out


def forget(todo_ids: Sequence[str]) -> int:
    """Delete the spans and trace bindings of forgotten todos (``sql/forget.sql``); the number
    of spans deleted. Runs in the caller's transaction (``activity/forget.py``)."""
    if not todo_ids:
        return 0
    rows = fetch_all(FORGET, {"ids": list(todo_ids)})
    return int(rows[0]["spans"])
