"""Bind a request's spans to todos and attempts: one query (``sql/bind.sql``), then ``resolve``.

A span binds, in this order, to:

1. the attempt whose ``trace_id`` is the span's trace id (the claim's traceparent, or the one
   minted for it);
2. the todo its ``switchboard.todo.id`` attribute names (the span's own, else its resource's),
   and the attempt ``switchboard.attempt.seq`` names when that attempt exists;
3. the todo its trace was bound to by attribute, earlier in this request or in an earlier one
   (``todo_trace_bindings``): exporters batch by time, not by trace, so a child often arrives
   without the attribute its parent carried, and in another request.

Rules 2 and 3 choose the attempt by interval when no seq is given: the last attempt claimed at
or before the span's start, else the todo's first (a span that starts a little before its claim,
on a skewed clock). A todo never claimed has no attempt, and binds nothing.

Never a guess: the query's ``t.endpoint_id = %(endpoint_id)s`` is the whole tenant boundary (a
foreign todo id binds nothing, exactly like an unknown one), a trace that matches attempts of
two todos binds by neither (rule 1 is skipped, rule 2 may still bind it), and a trace bound to
two todos binds to neither by rule 3. Everything left over is unbound: rejected and counted.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from otlp.translate import Candidate
from switchboard.lib.sql import fetch_all, load

BIND = load(Path(__file__).parent / "sql", "bind")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True, slots=True)
class Binding:
    todo_id: str
    attempt_seq: int
    via: str  # "trace", "attr" or "prior"


@dataclass(frozen=True, slots=True)
class Attempt:
    seq: int
    claimed_ns: int


@dataclass(slots=True)
class Found:
    """What the bind query returned, grouped for ``resolve``."""

    traces: dict[bytes, list[tuple[str, int]]] = field(default_factory=lambda: defaultdict(list))
    named: set[str] = field(default_factory=set)
    prior: dict[bytes, set[str]] = field(default_factory=lambda: defaultdict(set))
    attempts: dict[str, list[Attempt]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> Found:
        found = cls()
        for row in rows:
            via = row["via"]
            if via == "trace":
                found.traces[bytes(row["trace_id"])].append((row["todo_id"], row["seq"]))
            elif via == "attr":
                found.named.add(row["todo_id"])
            elif via == "prior":
                found.prior[bytes(row["trace_id"])].add(row["todo_id"])
            else:
                claimed = (row["claimed_at"] - _EPOCH) // dt.timedelta(microseconds=1) * 1000
                found.attempts[row["todo_id"]].append(Attempt(row["seq"], claimed))
        for attempts in found.attempts.values():
            attempts.sort(key=lambda a: a.seq)
        return found


@dataclass(frozen=True, slots=True)
class Resolution:
    """Per candidate its binding (None: unbound), and the (todo, trace) pairs bound by
    attribute, for ``todo_trace_bindings``."""

    bindings: list[Binding | None]
    new_bindings: set[tuple[str, bytes]]

    @property
    def unbound(self) -> int:
        return sum(1 for b in self.bindings if b is None)


def _by_interval(attempts: Sequence[Attempt], start_ns: int) -> int | None:
    """The last attempt claimed at or before ``start_ns``, else the first; None if none."""
    if not attempts:
        return None
    chosen = attempts[0].seq
    for attempt in attempts:
        if attempt.claimed_ns <= start_ns:
            chosen = attempt.seq
    return chosen


def _in_todo(found: Found, todo_id: str, seq: int | None, start_ns: int) -> int | None:
    attempts = found.attempts.get(todo_id, [])
    if seq is not None and any(a.seq == seq for a in attempts):
        return seq
    return _by_interval(attempts, start_ns)


def resolve(candidates: Sequence[Candidate], found: Found) -> Resolution:
    """Bind each candidate by the rules of the module docstring. Pure."""
    # Rule 3 within this request: the traces its spans bind by attribute.
    by_attribute: dict[bytes, set[str]] = defaultdict(set)
    for candidate in candidates:
        if candidate.todo_hint in found.named:
            by_attribute[candidate.trace_id].add(candidate.todo_hint)
    bindings: list[Binding | None] = []
    new_bindings: set[tuple[str, bytes]] = set()
    for candidate in candidates:
        binding = _rule_trace(candidate, found)
        if binding is None:
            binding = _rule_attribute(candidate, found)
            if binding is not None:
                new_bindings.add((binding.todo_id, candidate.trace_id))
        if binding is None:
            binding = _rule_prior(candidate, found, by_attribute)
        bindings.append(binding)
    return Resolution(bindings, new_bindings)


def _rule_trace(candidate: Candidate, found: Found) -> Binding | None:
    matches = found.traces.get(candidate.trace_id)
    if not matches:
        return None
    todos = {todo_id for todo_id, _ in matches}
    if len(todos) != 1:
        return None  # one trace on attempts of two todos: which one is a guess
    (todo_id,) = todos
    if len(matches) == 1:
        return Binding(todo_id, matches[0][1], "trace")
    # The same trace on several attempts of one todo (an agent that kept its traceparent
    # across claims): the interval decides among them.
    seqs = {seq for _, seq in matches}
    attempts = [a for a in found.attempts.get(todo_id, []) if a.seq in seqs]
    seq = _by_interval(attempts, candidate.start_ns)
    return Binding(todo_id, seq if seq is not None else max(seqs), "trace")


def _rule_attribute(candidate: Candidate, found: Found) -> Binding | None:
    todo_id = candidate.todo_hint
    if todo_id is None or todo_id not in found.named:
        return None
    seq = _in_todo(found, todo_id, candidate.seq_hint, candidate.start_ns)
    return None if seq is None else Binding(todo_id, seq, "attr")


def _rule_prior(
    candidate: Candidate, found: Found, by_attribute: Mapping[bytes, set[str]]
) -> Binding | None:
    todos = by_attribute.get(candidate.trace_id) or found.prior.get(candidate.trace_id)
    if not todos or len(todos) != 1:
        return None
    (todo_id,) = todos
    seq = _in_todo(found, todo_id, None, candidate.start_ns)
    return None if seq is None else Binding(todo_id, seq, "prior")


def bind(endpoint_id: UUID, candidates: Sequence[Candidate]) -> Resolution:
    """Run the bind query for ``candidates`` in ``endpoint_id``'s scope, then ``resolve``."""
    if not candidates:
        return Resolution([], set())
    trace_ids = sorted({c.trace_id for c in candidates})
    todo_ids = sorted({c.todo_hint for c in candidates if c.todo_hint is not None})
    rows = fetch_all(
        BIND, {"endpoint_id": endpoint_id, "trace_ids": trace_ids, "todo_ids": todo_ids}
    )
    return resolve(candidates, Found.from_rows(rows))
