"""The agent's transitions: create (intake and the Board's enqueue), then the holder's claim,
heartbeat, complete, fail and release, each guarded on the holder (endpoint, owner and, when
the claim asked for one, the fence token)."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from decimal import Decimal
from typing import Any
from uuid import UUID

from django.db import transaction
from django.utils import timezone

from attempts import rules
from switchboard import runtime_settings
from switchboard.lib import metrics
from switchboard.lib.actors import Actor
from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from switchboard.lib.sql import fetch_all, fetch_one
from switchboard.scope import Scope
from todos import limits
from todos.lifecycle.core import (
    activity_text,
    claim_params,
    claimed_result,
    counted,
    ended,
    extend_ttl,
    fail_params,
    fail_result,
    holder_params,
    jsonb,
    miss,
    release_closes,
    report_params,
    run,
    run_single,
)
from todos.lifecycle.statements import (
    CLAIM,
    CLAIM_EMPTY,
    CLAIM_NEXT,
    CLAIM_NEXT_QUEUES,
    CLAIM_NEXT_UNLIMITED,
    COMPLETE,
    CREATE,
    DEDUPE_HIT,
    FAIL,
    HEARTBEAT,
    HEARTBEAT_NOTE,
    IN_ENDPOINT_SCOPE,
    LOCK_QUEUE_LIMITS,
    LOCK_QUEUE_LIMITS_OF_TODO,
    RELEASE,
    REPORTED,
)
from todos.limits import (
    MAX_ATTEMPTS_LIMIT,
    OWNER_MAX_BYTES,
    TITLE_MAX_BYTES,
    WORK_ORDER_MAX_CHARS,
    check_name,
)
from todos.states import State
from todos.types import (
    BUDGET_PAUSES,
    ClaimResult,
    FailResult,
    QueueEmpty,
    ReportResult,
    TodoView,
)


def create(
    endpoint_id: UUID,
    *,
    queue: str,
    title: str = "",
    payload: Any = None,
    work_order: str | None = "",
    max_attempts: int = 5,
    event_id: int | None = None,
    routing_trace: Any = None,
    assignee: str | None = None,
    priority: int = 0,
    not_before: dt.datetime | None = None,
    start_by: dt.datetime | None = None,
    finish_by: dt.datetime | None = None,
    run_timeout_seconds: int | None = None,
    dedupe_key: str | None = None,
    max_cost_usd: Decimal | str | float | None = None,
) -> TodoView:
    """Create a pending todo on a live endpoint's queue and ring the doorbell (once due, for a
    ``not_before`` ahead: the sweeper rings it then).

    The time arguments are checked by ``limits.check_time`` (bad input raises ``InvalidInput``
    naming the field, and nothing is created). With a ``dedupe_key`` an unfinished todo of the
    endpoint already holds, nothing is created: that todo is returned with ``deduplicated``
    set. Two racing creates with one key give one todo (create.sql). ``max_cost_usd`` caps
    what its model calls may cost (``limits.check_cost``); None takes the queue's default.
    """
    limits.check_queue(queue)
    time = limits.check_time(
        priority=priority,
        not_before=not_before,
        start_by=start_by,
        finish_by=finish_by,
        run_timeout_seconds=run_timeout_seconds,
        dedupe_key=dedupe_key,
        now=timezone.now(),
    )
    if not isinstance(title, str) or len(title.encode()) > TITLE_MAX_BYTES:
        raise InvalidInput("title", f"must be a string of at most {TITLE_MAX_BYTES} bytes")
    work_order = "" if work_order is None else work_order
    if not isinstance(work_order, str) or len(work_order) > WORK_ORDER_MAX_CHARS:
        raise InvalidInput(
            "work_order", f"must be a string of at most {WORK_ORDER_MAX_CHARS} characters"
        )
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
        raise InvalidInput("max_attempts", "must be an integer")
    if not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
        raise InvalidInput("max_attempts", f"must be between 1 and {MAX_ATTEMPTS_LIMIT}")
    params = {
        "id": limits.new_todo_id(),
        "endpoint_id": endpoint_id,
        "queue": queue,
        "title": title.replace("\x00", ""),
        "event_id": event_id,
        "payload": jsonb("payload", {} if payload is None else payload),
        "work_order": work_order.replace("\x00", ""),
        "routing_trace": jsonb("routing_trace", routing_trace),
        "assignee": None if assignee is None else check_name("assignee", assignee, OWNER_MAX_BYTES),
        "max_attempts": max_attempts,
        "max_cost_usd": limits.check_cost("max_cost_usd", max_cost_usd),
        **{f.name: getattr(time, f.name) for f in fields(time)},
    }
    # Twice at most: a dedupe hit whose holder finished before it could be read is a key
    # free again, and the second insert takes it (or meets the next holder).
    for _ in range(2):
        rows = fetch_all(CREATE, params)
        if rows:
            counted("create")
            return TodoView.from_row(rows[0])
        if time.dedupe_key is None:
            break
        hit = fetch_one(DEDUPE_HIT, {"endpoint_id": endpoint_id, "dedupe_key": time.dedupe_key})
        if hit is not None:
            metrics.transition("create", "deduplicated")
            return replace(TodoView.from_row(hit), deduplicated=True)
    raise InvalidInput("endpoint", "unknown or revoked")


def claim_next_or_why(
    endpoint_id: UUID,
    queues: Sequence[str],
    *,
    owner: str,
    lease_ttl_seconds: int | None = None,
    claimant: str | None = None,
    session: str | None = None,
    require_fence: bool = False,
    trace_id: bytes | None = None,
) -> ClaimResult | tuple[QueueEmpty, ...]:
    """Claim the first claimable todo on ``queues`` (highest priority, then oldest), saying why
    when it takes nothing: one ``QueueEmpty`` per queue asked for, in order (a second read, run
    only then: ``claim_empty.sql``). ``trace_id`` (16 bytes) is the new attempt's trace: spans
    of it bind to the attempt. ``claim_next`` is its thin form, without the reasons.

    A limited queue whose count the claim found stale (another claim of it committed after the
    claim's snapshot, ``_queue_limited.sql``) reads here as ``busy`` with its limit: the claim
    then runs again behind the queue's lock, in one transaction with it, where its snapshot
    follows every claim of the queue before it, so the count is exact and it takes a todo when
    there is room (docs/decisions/0028-queue-limits.md).

    One queue is claimed first with the fast form, which leaves the limits' lock and spend out
    and takes nothing from a queue that sets a limit (``CLAIM_NEXT_UNLIMITED``); that one, and
    several queues, take the full form (docs/decisions/0044-claim-unlimited-queue.md).
    """
    if isinstance(queues, str) or not queues:
        raise InvalidInput("queues", "must be a non-empty list of queue names")
    # Distinct, in the order given: claim_next_queues.sql reads each queue's heads once.
    queue_list = list(dict.fromkeys(limits.check_queue(q, "queues") for q in queues))
    params, token = claim_params(
        owner=owner,
        lease_ttl_seconds=lease_ttl_seconds,
        claimant=claimant,
        session=session,
        require_fence=require_fence,
        claimer_kind="endpoint",
        claimer_endpoint_id=endpoint_id,
        trace_id=trace_id,
    )
    params.update(endpoint_id=endpoint_id, queue=queue_list[0], queues=queue_list)
    if len(queue_list) == 1 and not _known_limited(endpoint_id, queue_list[0]):
        # The fast form first: it takes nothing from a queue that sets a limit.
        rows = run(CLAIM_NEXT_UNLIMITED, params, None)
        if rows:
            return claimed_result(rows[0], token, "claim_next")
        empty = fetch_all(CLAIM_EMPTY, params)
        if not _sets_a_limit(empty[0]):
            metrics.transition("claim_next", "empty")
            return _reasons(empty)
        _note_limited(endpoint_id, queue_list[0])
    sql = CLAIM_NEXT if len(queue_list) == 1 else CLAIM_NEXT_QUEUES
    rows = run(sql, params, None)
    if not rows:
        why = _why_empty(params)
        if any(w.reason == "busy" and w.max_in_flight is not None for w in why):
            with transaction.atomic():
                fetch_all(LOCK_QUEUE_LIMITS, params)
                rows = run(sql, params, None)
            if not rows:
                why = _why_empty(params)
        if not rows:
            metrics.transition("claim_next", "empty")
            return why
    return claimed_result(rows[0], token, "claim_next")


# The queues (endpoint, queue) this process found setting a limit when its claim tried the
# fast form, each until a monotonic instant: their claims go straight to the full form
# (CLAIM_NEXT) until then. A limit set since is found by the fast form's guard, on the claim
# after it; one lifted is noticed when the entry expires. Bounded: full, it starts again.
# Shared by the process's threads: a dict's get and set are atomic under the GIL.
LIMITED_QUEUE_SECONDS = 60.0
_LIMITED_QUEUES_MAX = 4096
_limited_queues: dict[tuple[UUID, str], float] = {}


def _known_limited(endpoint_id: UUID, queue: str) -> bool:
    until = _limited_queues.get((endpoint_id, queue))
    return until is not None and until > time.monotonic()


def _note_limited(endpoint_id: UUID, queue: str) -> None:
    if len(_limited_queues) >= _LIMITED_QUEUES_MAX:
        _limited_queues.clear()
    _limited_queues[(endpoint_id, queue)] = time.monotonic() + LIMITED_QUEUE_SECONDS


def _sets_a_limit(row: dict[str, Any]) -> bool:
    """Whether a ``claim_empty.sql`` row's queue sets a limit (the fast form skips such a queue)."""
    return row["max_in_flight"] is not None or row["claims_per_minute"] is not None


def _why_empty(params: dict[str, Any]) -> tuple[QueueEmpty, ...]:
    return _reasons(fetch_all(CLAIM_EMPTY, params))


def _reasons(rows: list[dict[str, Any]]) -> tuple[QueueEmpty, ...]:
    """``claim_empty.sql``'s rows, one reason a queue."""
    return tuple(QueueEmpty.from_row(row) for row in rows)


def _taking_only[**P](
    why: Callable[P, ClaimResult | tuple[QueueEmpty, ...]],
) -> Callable[P, ClaimResult | None]:
    """``why`` as a claim alone: what it took, None in place of its reasons."""

    def taking(*args: P.args, **kwargs: P.kwargs) -> ClaimResult | None:
        got = why(*args, **kwargs)
        return got if isinstance(got, ClaimResult) else None

    return taking


# The signature is claim_next_or_why's, once: this is its thin form.
claim_next = _taking_only(claim_next_or_why)
claim_next.__name__ = claim_next.__qualname__ = "claim_next"
claim_next.__doc__ = """Claim the first claimable todo on ``queues`` (highest priority, then
oldest); None when there is nothing to claim. ``claim_next_or_why`` without the reasons: its
arguments, ``trace_id`` (16 bytes, the new attempt's trace: spans of it bind to the attempt)
among them."""


def claim(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    lease_ttl_seconds: int | None = None,
    claimant: str | None = None,
    session: str | None = None,
    require_fence: bool = False,
    trace_id: bytes | None = None,
) -> ClaimResult:
    """Claim one todo by id, under the same predicate as ``claim_next`` (``trace_id`` too)."""
    params, token = claim_params(
        owner=owner,
        lease_ttl_seconds=lease_ttl_seconds,
        claimant=claimant,
        session=session,
        require_fence=require_fence,
        claimer_kind="endpoint",
        claimer_endpoint_id=endpoint_id,
        trace_id=trace_id,
    )
    scope = Scope.of_endpoint(endpoint_id)
    params.update(id=todo_id, **scope.params)
    rows = run(CLAIM, params, todo_id) or _behind_limits(
        LOCK_QUEUE_LIMITS_OF_TODO, CLAIM, params, todo_id
    )
    if not rows:
        error = miss(scope, todo_id, "claim")
        if isinstance(error, LeaseConflict) and (stop := _queue_stop(endpoint_id, params)):
            error = LeaseConflict(todo_id, "claim", because=stop)
        raise error
    return claimed_result(rows[0], token, "claim")


def _queue_stop(endpoint_id: UUID, params: dict[str, Any]) -> str | None:
    """What stops a claim of the pending todo ``params`` name on its queue's side (a pause, its
    limits), in words, or None: read only after the claim took nothing."""
    row = fetch_one(IN_ENDPOINT_SCOPE, params)
    if row is None or row["state"] != State.PENDING:
        return None
    [why] = _why_empty({**params, "endpoint_id": endpoint_id, "queues": [row["queue"]]})
    queue = row["queue"]
    if why.reason == "paused" and why.paused_by in BUDGET_PAUSES:
        until = f" until {why.at:%H:%M}Z" if why.at is not None else ""
        return f"its queue {queue!r} is paused{until}: {BUDGET_PAUSES[why.paused_by]} is spent"
    if why.reason == "paused":
        return f"its queue {queue!r} is paused"
    if why.reason == "max_in_flight":
        return f"its queue {queue!r} holds {why.in_flight} of its max_in_flight {why.max_in_flight}"
    if why.reason == "rate":
        if why.at is None:  # claims_per_minute 0: no claim will ever be left
            return f"its queue {queue!r} allows no claims (its claims_per_minute is 0)"
        return f"its queue {queue!r} has no claim left this minute (the next at {why.at:%H:%M:%S}Z)"
    return None


def _behind_limits(
    lock: str, sql: str, params: dict[str, Any], todo_id: str | None
) -> list[dict[str, Any]]:
    """Run an agent's claim that took nothing again behind its queues' limit locks, when any of
    them is limited; ``[]`` when none is (an unlimited queue's empty claim pays this one probe).

    A claim of a limited queue gives nothing when a claim of that queue committed after its
    snapshot (its count of held todos would be stale: ``_queue_limited.sql``). Run after the
    lock, in one transaction with it, the claim's snapshot follows every claim of the queue
    before it, so its count is exact and it takes a todo when there is room
    (docs/decisions/0028-queue-limits.md).
    """
    # Outside a transaction the lock is a probe: it is released as soon as it is read.
    if not fetch_all(lock, params):
        return []
    with transaction.atomic():
        fetch_all(lock, params)
        return run(sql, params, todo_id)


def heartbeat(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    lease_ttl_seconds: int | None = None,
    lease_token: str | None = None,
    note: str | None = None,
) -> ReportResult:
    """Extend the holder's lease; keep ``note``, if given, as a progress note on the attempt.

    The note is cut to 512 bytes and masked (``activity_text``); past the attempt's note cap
    it is counted in the attempt's ``notes_dropped`` instead of stored. A note of only white
    space says nothing: the heartbeat keeps none.
    """
    if isinstance(note, str) and not note.strip():
        note = None
    params = {
        **holder_params(endpoint_id, owner, lease_token),
        **extend_ttl(lease_ttl_seconds),
    }
    scope = Scope.of_endpoint(endpoint_id)
    if note is None:
        row = run_single("heartbeat", HEARTBEAT, params, scope, todo_id)
        counted("heartbeat")
        return ReportResult(TodoView.from_row(row), row["attempt_seq"])
    text, truncated = activity_text("note", note)
    current = runtime_settings.current()
    params |= {
        "note": text,
        "note_truncated": truncated,
        "actor_ref": str(Actor.endpoint(endpoint_id)),
        "notes_cap": current.notes_max_per_attempt,
        "activity_cap": current.activity_max_per_todo,
    }
    row = run_single("heartbeat", HEARTBEAT_NOTE, params, scope, todo_id)
    counted("heartbeat", activity="note" if row["noted"] else None)
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def _report(
    transition: str, outcome: str, sql: str, params: dict[str, Any], endpoint_id: UUID, todo_id: str
) -> tuple[dict[str, Any], bool]:
    """Run the holder's complete or fail (``outcome`` is the one it closes its attempt with).

    Returns the row and whether the report had already taken effect: a retry from the same
    holder of the same attempt, whose first answer was lost, matches nothing, and answers the
    same success from the todo as it stands without changing anything (reported.sql). Any
    other miss raises as ``_single``'s does. The transition stays one statement; only a miss
    pays the second read, as it always did (in_scope.sql).
    """
    scope = Scope.of_endpoint(endpoint_id)
    rows = run(sql, {"id": todo_id, **params, **scope.params}, todo_id)
    if rows:
        return rows[0], False
    holder = {k: params[k] for k in ("endpoint_id", "owner", "token_hash")}
    row = fetch_one(REPORTED, {"id": todo_id, "outcome": outcome, **holder, **scope.params})
    if row is not None and row["replayed"]:
        metrics.transition(transition, "replayed")
        return row, True
    metrics.transition(transition, "miss")
    if row is None:
        raise TodoNotFound(todo_id)
    if (error := ended(todo_id, holder)) is not None:
        raise error
    raise LeaseConflict(todo_id, transition)


def complete(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    result: Any = None,
    summary: str | None = None,
    artifact: str | None = None,
    lease_token: str | None = None,
) -> ReportResult:
    """Complete the holder's todo; its attempt closes completed/done.

    A retry of a complete that already took effect (same holder, same attempt) answers the same
    success and changes nothing: the retry's result, summary and artifact are not stored.
    """
    params = {
        **holder_params(endpoint_id, owner, lease_token),
        **report_params(result, summary, artifact),
    }
    row, replayed = _report("complete", "completed", COMPLETE, params, endpoint_id, todo_id)
    if not replayed:
        counted("complete", ("completed", "done"))
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def fail(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    result: Any = None,
    summary: str | None = None,
    artifact: str | None = None,
    lease_token: str | None = None,
    retryable: bool = True,
    retry_after_seconds: int | None = None,
) -> FailResult:
    """Fail the holder's todo: a retry after backoff while budget is left, else dead letter.

    A retry of a fail that already took effect (same holder, same attempt) answers the same
    success from the todo as it now stands (its retry may since have been requeued) and
    changes nothing.
    """
    params = {
        **holder_params(endpoint_id, owner, lease_token),
        **report_params(result, summary, artifact),
        **fail_params(retryable, retry_after_seconds),
    }
    row, replayed = _report("fail", "failed", FAIL, params, endpoint_id, todo_id)
    return fail_result(row, "fail", count=not replayed)


def release(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    summary: str | None = None,
    lease_token: str | None = None,
) -> ReportResult:
    """Give the todo back to its queue; the attempt is not refunded, so the release of the last
    allowed attempt dead-letters it instead (release.sql)."""
    text, truncated = rules.summary(summary)
    params = {
        **holder_params(endpoint_id, owner, lease_token),
        "summary": text,
        "summary_truncated": truncated,
    }
    row = run_single("release", RELEASE, params, Scope.of_endpoint(endpoint_id), todo_id)
    counted("release", release_closes(row))
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])
