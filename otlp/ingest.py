"""One OTLP export request after authentication: decode → bind → translate → store.

Sync (the ORM and the SQL helpers are): the receiver runs ``ingest`` in a worker thread. What it
returns is everything the answer and the metrics need; what it raises is ``decode.Refused``
(400, 413, 415) or a ``DatabaseError`` (the receiver's 503).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from otlp import bind, decode, prices, store, translate
from switchboard import runtime_settings
from switchboard.lib import metrics
from todos.lifecycle import sweeps as lifecycle_sweeps


@dataclass(frozen=True, slots=True)
class Outcome:
    """A request's spans by result; together they are every span the request held."""

    accepted: int = 0
    unbound: int = 0
    dropped_cap: int = 0
    invalid: int = 0

    @property
    def rejected(self) -> int:
        return self.unbound + self.dropped_cap + self.invalid

    @property
    def total(self) -> int:
        return self.accepted + self.rejected

    def message(self) -> str:
        """The partial-success message: each reason with its count, and where to read more."""
        reasons = []
        if self.unbound:
            reasons.append(
                f"{self.unbound} unbound (no attempt's trace, switchboard.todo.id attribute or"
                " earlier span of the trace matched a todo of this endpoint)"
            )
        if self.dropped_cap:
            reasons.append(
                f"{self.dropped_cap} over cap (the attempt or todo has stored its cap of spans)"
            )
        if self.invalid:
            reasons.append(f"{self.invalid} invalid (malformed trace or span id, or times)")
        if not reasons:
            return ""
        return "; ".join(reasons) + "; see docs/guides/agent-activity.md"


@dataclass(frozen=True, slots=True)
class Translated:
    """Decode, bind and translate, without the store: what the fuzz test checks."""

    rows: list[translate.Row]
    new_bindings: set[tuple[str, bytes]]
    unbound: int
    invalid: int


def prepare(
    endpoint_id: UUID,
    body: bytes,
    content_type: str | None,
    content_encoding: str | None,
    cap: int,
    capture_content: bool,
) -> Translated:
    """Decode the body, bind its spans in ``endpoint_id``'s scope, translate the bound ones."""
    request = decode.decode(body, content_type, content_encoding, cap)
    collected = translate.collect(request)
    resolution = bind.bind(endpoint_id, collected.candidates)
    book = prices.book()
    rows = [
        translate.translate(candidate, binding.todo_id, binding.attempt_seq, capture_content, book)
        for candidate, binding in zip(collected.candidates, resolution.bindings, strict=True)
        if binding is not None
    ]
    return Translated(rows, resolution.new_bindings, resolution.unbound, collected.invalid)


def ingest(
    endpoint_id: UUID,
    body: bytes,
    content_type: str | None,
    content_encoding: str | None,
    cap: int,
) -> Outcome:
    """Store what binds of one request's spans; say what became of each."""
    current = runtime_settings.current()
    prepared = prepare(
        endpoint_id,
        body,
        content_type,
        content_encoding,
        cap,
        capture_content=bool(current.otlp_capture_content),
    )
    stored = store.store(
        prepared.rows,
        prepared.new_bindings,
        attempt_cap=current.spans_max_per_attempt,
        todo_cap=current.spans_max_per_todo,
    )
    refused: dict[str, int] = {}
    for row in prepared.rows:
        if row.usage_refused is not None:
            refused[row.usage_refused] = refused.get(row.usage_refused, 0) + 1
    for reason, n in refused.items():
        metrics.usage_refused(reason, n)
    if stored.over_cap:
        # Past their cap: ended now, so the holder's next heartbeat or report hears it (the
        # sweeper's pass ends any this misses).
        lifecycle_sweeps.end_over_cap(stored.over_cap)
    outcome = Outcome(
        accepted=stored.accepted,
        unbound=prepared.unbound,
        dropped_cap=stored.dropped,
        invalid=prepared.invalid,
    )
    # The fleet's per-endpoint count (the exporters most agents use drop the partial success).
    store.record_refusals(
        endpoint_id,
        unbound=outcome.unbound,
        over_cap=outcome.dropped_cap,
        invalid=outcome.invalid,
    )
    return outcome
