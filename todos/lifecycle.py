"""The todo lifecycle: the only writer of ``todos`` and ``todo_attempts``.

One function per transition, each running one SQL statement (``todos/sql/<name>.sql``) in one
round trip: data-modifying CTEs open, close and prune attempts in the same statement that moves
the todo, so they commit together or not at all.

Concurrency argument
--------------------
Every transition matches its todo with a conditional predicate and changes it under the row
lock that the UPDATE (or the claim's ``FOR UPDATE``) takes. Whoever locks a row first changes
it; a competitor that waited re-evaluates its predicate against the new row version (READ
COMMITTED's re-check) and, the state having moved on, matches nothing. So of a reaper and a
taker racing for one lapsed lease exactly one closes the dead attempt, and it is closed in the
same statement that ends the lease. Sweeps lock with SKIP LOCKED and never wait on a claim.

A statement's CTEs run in an unspecified order against one snapshot, so "at most one open
attempt per todo" cannot be a unique index checked row by row (a takeover's INSERT could be
checked before its close). It is the deferred exclusion constraint ``todo_attempts_one_open``,
checked at commit. It cannot fire unless there is a bug; when it does, the transaction rolls
back and ``AttemptInvariantViolated`` names the todo.

Transactions
------------
A transition runs in autocommit when called outside ``transaction.atomic``: its one statement
is its own transaction, which is the single round trip the benchmarks measure. Inside a
caller's atomic block it joins that transaction, and its metrics are counted on commit.

Plans
-----
Every statement follows the plan rules of ``todos/sql/README.md`` (the todo by its key alone,
attempt arms keyed by the id, ``OFFSET 0`` in probes of ``todo_attempts``), so a prepared
statement's generic plan stays a few buffers whatever the statistics;
``tests/switchboard/test_plans.py`` checks each statement's plan under skewed statistics.

Announcements
-------------
Every statement that changes what a page or a consumer shows announces its todos itself, with
``pg_notify('todo_changed', …)`` (``todos/sql/_notify_*.sql``), which PostgreSQL delivers at
commit to every process's listener (``switchboard/lib/changefeed.py``). A plain heartbeat does
not: it changes nothing a page shows, and it is the hottest path.

Misses
------
A statement that matched nothing is classified after the fact (``in_scope.sql``): no row in the
caller's scope → ``TodoNotFound``; a row that did not match → ``LeaseConflict``. A wrong fence
token is exactly "not the holder".
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

from django.conf import settings
from django.db import IntegrityError, transaction
from psycopg.types.json import Jsonb

from attempts import fence, rules
from switchboard import runtime_settings
from switchboard.lib import jsonlimits, metrics, redact
from switchboard.lib.errors import (
    AttemptInvariantViolated,
    InvalidInput,
    LeaseConflict,
    TodoNotFound,
)
from switchboard.lib.sql import fetch_all, fetch_one, load
from switchboard.lib.text import cut_utf8, strip_control
from switchboard.scope import ENDPOINT_SCOPE_SQL, HUMAN_SCOPE_SQL, Scope
from todos.queries import TodoFilters, recent_closed_attempts
from todos.states import IN_FLIGHT_STATES, PAUSED_STATES
from todos.types import (
    AttemptView,
    BulkResult,
    ClaimResult,
    FailResult,
    QueueChange,
    ReportResult,
    RevokeResult,
    RingResult,
    SweepResult,
    TodoView,
)

_SQL = Path(__file__).parent / "sql"
# The owning human, on the todo's current attempt (see _current_attempt.sql); never fenced.
_OPERATOR_GUARD = HUMAN_SCOPE_SQL + " AND @{current_attempt}"


def _statement(name: str, **fragments: str) -> str:
    # Agent transitions guard on the holder (``_holder.sql``) and on their snapshot seeing the
    # open attempt they close (``_current_attempt.sql``), unless told otherwise. They write no
    # activity: an agent's own transitions are recorded by its attempt.
    defaults = {
        "guard": "@{holder} AND @{current_attempt}",
        "activity": "",
        "activity_bump": "",
        # The queue a claim_next takes from, for its paused-queue probe (_queue_open.sql).
        "pause_endpoint": "%(endpoint_id)s",
        "pause_queue": "%(queue)s",
        # heartbeat.sql announces only the owning human's extension (OPERATOR_EXTEND).
        "extend_notify": "",
    }
    return load(_SQL, name, **{**defaults, **fragments})


def _recorded(name: str, *, attempt: str, from_state: str, **fragments: str) -> str:
    """A statement that also writes its activity row (``_activity_arm.sql``).

    ``attempt`` and ``from_state`` are SQL expressions over the statement's CTEs: the attempt
    the row names, and the state the todo left.
    """
    return _statement(
        name,
        activity=",\n@{activity_arm}",
        activity_bump="activity_seq = t.activity_seq + 1, ",
        activity_attempt=attempt,
        activity_from=from_state,
        **fragments,
    )


# Statements, loaded once at import (a missing file or fragment fails start-up).
# Agent variants guard on the holder (endpoint, owner, fence); operator variants on the human's
# scope and are never fenced: the owning human can always recover a stuck attempt.
CREATE = _statement("create")
# One queue (the usual call) and several (docs/decisions/0013-claim-per-queue.md).
CLAIM_NEXT = _statement("claim_next")
CLAIM_NEXT_QUEUES = _statement("claim_next_queues", pause_queue="q.queue")
# A todo's own queue, where a statement reaches the todo first (claim by id, rings).
_ITS_QUEUE = {"pause_endpoint": "t.endpoint_id", "pause_queue": "t.queue"}
# Operator variants, A2A transitions and the retry sweep also write one activity row each
# (``_recorded``): the attempt it names and the state the todo left are expressions over the
# statement's own CTEs.
_HELD = {"attempt": "upd.attempts_total", "from_state": "'claimed'"}
# An agent's claim by id is refused on a paused queue, as claim_next would not take the todo;
# the owning human's is not: a pause stops the agents
# (docs/decisions/0020-queue-pause-and-bulk-actions.md).
CLAIM = _statement("claim", scope=ENDPOINT_SCOPE_SQL, **_ITS_QUEUE)
OPERATOR_CLAIM = _recorded(
    "claim",
    attempt="upd.attempts_total",
    from_state="upd.prior_state",
    scope=HUMAN_SCOPE_SQL,
    queue_open="TRUE",
)
# A heartbeat closes nothing, so it guards on the todo row alone (heartbeat.sql).
HEARTBEAT = _statement("heartbeat", guard="@{holder}")
HEARTBEAT_NOTE = _statement("heartbeat_note", guard="@{holder}")
OPERATOR_EXTEND = _recorded(
    "heartbeat", guard=HUMAN_SCOPE_SQL, extend_notify=", @{notify_changed} AS notified", **_HELD
)
COMPLETE = _statement("complete")
OPERATOR_COMPLETE = _recorded("complete", guard=_OPERATOR_GUARD, **_HELD)
FAIL = _statement("fail")
OPERATOR_FAIL = _recorded("fail", guard=_OPERATOR_GUARD, **_HELD)
RELEASE = _statement("release")
OPERATOR_RELEASE = _recorded("release", guard=_OPERATOR_GUARD, **_HELD)
REAP = _statement("reap")
RING = _statement("ring", **_ITS_QUEUE)
RING_SCANS = ("gate", "push", "unclaimed")  # ring_due's scans; see ring_due.sql
RING_DUE = {
    scan: _statement("ring_due", due=f"@{{due_{scan}}}", **_ITS_QUEUE) for scan in RING_SCANS
}
CLAIM_PUSHES = _statement("claim_pushes")
RECORD_PUSH = _statement("record_push")
UNCLAIM_PUSHES = _statement("unclaim_pushes")
QUEUE_TEST_PUSH = _statement("queue_test_push")
REQUEUE_DUE_RETRIES = _recorded("requeue_due_retries", attempt="NULL::int", from_state="'failed'")
RETRY = _recorded("retry", attempt="NULL::int", from_state="upd.from_state", scope=HUMAN_SCOPE_SQL)
_CANCELED = {"attempt": "(SELECT seq FROM closed)", "from_state": "upd.from_state"}
CANCEL = {
    True: _recorded("cancel", scope=ENDPOINT_SCOPE_SQL, **_CANCELED),
    False: _recorded("cancel", scope=HUMAN_SCOPE_SQL, **_CANCELED),
}
REVOKE_ENDPOINT = _statement("revoke_endpoint")
# A queue's pause and resume: by a human (their own endpoints only) or the system (a command).
PAUSE_QUEUE = {
    True: _statement("pause_queue", owner="e.owner_id = %(scope_human_id)s"),
    False: _statement("pause_queue", owner="TRUE"),
}
RESUME_QUEUE = {
    True: _statement("resume_queue", owner="e.owner_id = %(scope_human_id)s"),
    False: _statement("resume_queue", owner="TRUE"),
}
INTERRUPT = _recorded("interrupt", **_HELD)
_RESUMED = {"attempt": "upd.attempts_total", "from_state": "upd.from_state"}
RESUME = _recorded("resume", scope=HUMAN_SCOPE_SQL, **_RESUMED)
# The requester answers over A2A (a2a_server): the endpoint's scope, an a2a_state row.
RESUME_BY_REQUESTER = _recorded("resume", scope=ENDPOINT_SCOPE_SQL, **_RESUMED)
REJECT = _recorded("reject", **_HELD)
# The holder's complete and fail classify a miss with REPORTED instead: it may be a retry.
REPORTED = _statement("reported", scope=ENDPOINT_SCOPE_SQL)
IN_SCOPE = {
    True: _statement("in_scope", scope=ENDPOINT_SCOPE_SQL),
    False: _statement("in_scope", scope=HUMAN_SCOPE_SQL),
}

LEASE_TTL_MIN_SECONDS = 10
LEASE_TTL_MAX_SECONDS = 24 * 3600
RETRY_AFTER_MAX_SECONDS = 7 * 24 * 3600
MAX_ATTEMPTS_LIMIT = 1000
QUEUE_MAX_BYTES = 128
OWNER_MAX_BYTES = 256
TITLE_MAX_BYTES = 1024
SWEEP_BATCH = 500
# The most todos one bulk action changes: one statement holds their row locks until it commits,
# so a click must not lock the table for long (docs/decisions/0020-queue-pause-and-bulk-actions.md).
BULK_MAX = 10_000
PRIOR_ATTEMPTS = 5  # closed attempts a claim result carries
TRACE_ID_BYTES = 16  # todo_attempts.trace_id: a W3C trace id
INTERRUPT_STATES = tuple(str(state) for state in PAUSED_STATES)  # what interrupt may move to
ACTIVITY_TEXT_MAX_BYTES = 512  # todo_activity.message
ACTOR_REF_MAX_BYTES = 128  # todo_activity.actor_ref
# A note may span lines; any other control character (NUL included) is refused.
_NOTE_CONTROLS_ALLOWED = frozenset("\n\t")


_ONE_OPEN_KEY = re.compile(r"\(todo_id\)=\(([^)]*)\)")


# --- helpers ---------------------------------------------------------------------------------


def new_todo_id() -> str:
    """``td_`` + 20 lowercase base32 characters (100 random bits)."""
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    return "td_" + "".join(secrets.choice(alphabet) for _ in range(20))


def _jsonb(field: str, value: Any) -> Jsonb | None:
    """Wrap ``value`` for a jsonb parameter, refusing what jsonb cannot hold or MCP answer.

    The depth bound (``jsonlimits``) makes a todo whose claim could not be encoded impossible:
    it is refused here, at creation, not after a claim has committed.
    """
    if value is None:
        return None
    if (reason := jsonlimits.problem(value)) is not None:
        raise InvalidInput(field, reason)
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(field, f"is not JSON ({exc})") from None
    # Send the text just made (psycopg's default json.dumps would make the same text again).
    return Jsonb(value, dumps=lambda _value: text)


def check_name(field: str, value: Any, max_bytes: int = QUEUE_MAX_BYTES) -> str:
    """A short identifier (queue, owner): a non-empty string without control characters."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(field, "must be a non-empty string")
    if (reason := jsonlimits.text_problem(value)) is not None:
        raise InvalidInput(field, reason)
    if len(value.encode()) > max_bytes:
        raise InvalidInput(field, f"must be at most {max_bytes} bytes")
    # isprintable() is False for every control character (and for some others): only then is
    # the per-character check needed.
    if not value.isprintable() and strip_control(value) != value:
        raise InvalidInput(field, "must not contain control characters")
    return value


def _ttl(seconds: int | None) -> int:
    if seconds is None:
        return runtime_settings.current().lease_ttl_default_seconds
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise InvalidInput("lease_ttl_seconds", "must be an integer")
    if not LEASE_TTL_MIN_SECONDS <= seconds <= LEASE_TTL_MAX_SECONDS:
        raise InvalidInput(
            "lease_ttl_seconds",
            f"must be between {LEASE_TTL_MIN_SECONDS} and {LEASE_TTL_MAX_SECONDS}",
        )
    return seconds


def _report_params(result: Any, summary: str | None, artifact: str | None) -> dict[str, Any]:
    text, truncated = rules.summary(summary)
    if text is None and settings.SWITCHBOARD_ATTEMPT_SUMMARY_FROM_RESULT:
        text, truncated = rules.summary_from_result(result)
    return {
        "result": _jsonb("result", result),
        "summary": text,
        "summary_truncated": truncated,
        "artifact": rules.artifact(artifact, settings.SWITCHBOARD_ARTIFACT_SCHEMES),
    }


def _refused_control(char: str) -> bool:
    code = ord(char)
    return (code < 0x20 and char not in _NOTE_CONTROLS_ALLOWED) or 0x7F <= code <= 0x9F


def activity_text(field: str, text: str | None, *, strict: bool = True) -> tuple[str | None, bool]:
    """Cut ``text`` to the activity message cap, then mask credentials in it.

    ``strict`` refuses NUL and control characters but newline and tab (an agent's note);
    otherwise they are dropped (a human's reason, already accepted as a summary). Masking comes
    after the cut (its patterns then see at most the cap) and may lengthen the text (a marker
    for a short secret), so it is cut once more. Returns the text and whether the first cut
    dropped anything.
    """
    if text is None:
        return None, False
    if not isinstance(text, str):
        raise InvalidInput(field, "must be a string")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        raise InvalidInput(field, "must be valid Unicode (no lone surrogates)")
    if not text.isprintable() and any(_refused_control(c) for c in text):
        if strict:
            raise InvalidInput(field, "must not contain NUL or control characters")
        text = "".join(c for c in text if not _refused_control(c))
    cut, truncated = cut_utf8(text, ACTIVITY_TEXT_MAX_BYTES)
    masked, _ = redact.mask(cut)
    return cut_utf8(masked, ACTIVITY_TEXT_MAX_BYTES)[0], truncated


def _activity(
    kind: str,
    actor_kind: str,
    actor_ref: str,
    action: str | None,
    *,
    message: str | None = None,
    message_field: str = "summary",
    detail: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The parameters of ``_activity_arm.sql``; ``message_field`` names it in errors."""
    text, truncated = activity_text(message_field, message, strict=False)
    return {
        "activity_kind": kind,
        "actor_kind": actor_kind,
        "actor_ref": cut_utf8(actor_ref, ACTOR_REF_MAX_BYTES)[0],
        "activity_message": text,
        "activity_truncated": truncated,
        "activity_action": action,
        "activity_detail": _jsonb("detail", dict(detail or {})),
    }


def _by_human(human_id: int, action: str, message: str | None = None) -> dict[str, Any]:
    """A ``human_action`` row: who pressed the button, and what it did."""
    return _activity("human_action", "human", f"human:{human_id}", action, message=message)


def _by_endpoint(owner: str, action: str, message: str | None = None) -> dict[str, Any]:
    """An ``a2a_state`` row: the holder moved its own todo through an A2A state."""
    return _activity("a2a_state", "endpoint", owner, action, message=message)


def _holder(endpoint_id: UUID, owner: str, lease_token: str | None) -> dict[str, Any]:
    return {
        "endpoint_id": endpoint_id,
        "owner": check_name("owner", owner, OWNER_MAX_BYTES),
        "token_hash": fence.digest(lease_token),
    }


def _run(sql: str, params: Mapping[str, Any], todo_id: str | None) -> list[dict[str, Any]]:
    """Run a transition's statement; map the deferred constraint's failure to a domain error."""
    try:
        return fetch_all(sql, params)
    except IntegrityError as exc:
        _reraise(exc, todo_id)
        raise


def _invariant_error(exc: IntegrityError, todo_id: str | None) -> Exception:
    """``AttemptInvariantViolated`` if ``exc`` is the one-open-attempt constraint, else ``exc``."""
    cause = exc.__cause__
    diag = getattr(cause, "diag", None)
    if diag is None or diag.constraint_name != "todo_attempts_one_open":
        return exc
    match = _ONE_OPEN_KEY.search(diag.message_detail or "")
    return AttemptInvariantViolated(match.group(1) if match else todo_id)


def _reraise(exc: IntegrityError, todo_id: str | None) -> None:
    """Raise ``AttemptInvariantViolated`` for the one-open-attempt constraint; else return.

    Any other IntegrityError must go on unchanged (the caller re-raises it): ``raise exc from
    exc`` would make it its own ``__cause__`` and lose the psycopg error and its diagnostics.
    """
    mapped = _invariant_error(exc, todo_id)
    if mapped is not exc:
        raise mapped from exc


def check_commit[T](func: Callable[[], T]) -> T:
    """Run ``func`` in a transaction; a second open attempt found at commit raises
    ``AttemptInvariantViolated`` naming the todo instead of a bare ``IntegrityError``."""
    try:
        with transaction.atomic():
            return func()
    except IntegrityError as exc:
        _reraise(exc, None)
        raise


def _miss(scope: Scope, todo_id: str, transition: str) -> Exception:
    metrics.transition(transition, "miss")
    if fetch_one(IN_SCOPE[scope.is_endpoint], {"id": todo_id, **scope.params}):
        return LeaseConflict(todo_id, transition)
    return TodoNotFound(todo_id)


def _counted(
    transition: str,
    closes: tuple[str, str] | None = None,
    n: int = 1,
    activity: str | None = None,
) -> None:
    """Count a transition (the attempts it closed, the activity rows it wrote) on commit."""

    def count() -> None:
        metrics.transition(transition, "ok", n)
        if closes is not None:
            metrics.attempt_closed(*closes, n)
        if activity is not None:
            metrics.activity(activity, n)

    transaction.on_commit(count)


def _single(
    transition: str,
    sql: str,
    params: dict[str, Any],
    scope: Scope,
    todo_id: str,
) -> dict[str, Any]:
    """Run a single-todo statement (it announces its change itself: ``_notify_*.sql``)."""
    rows = _run(sql, {"id": todo_id, **params, **scope.params}, todo_id)
    if not rows:
        raise _miss(scope, todo_id, transition)
    return rows[0]


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
    rows = _run(sql, {"id": todo_id, **params, **scope.params}, todo_id)
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
    raise LeaseConflict(todo_id, transition)


def _claim_result(row: dict[str, Any], lease_token: str | None) -> ClaimResult:
    took_over = row["prior_state"] == "claimed"
    if row.get("prior_stale"):
        # The statement waited on the row and its snapshot missed the latest ending; read the
        # history as committed instead (rare: see _claim_tail.sql).
        prior_views = recent_closed_attempts(row["id"], PRIOR_ATTEMPTS)
    else:
        prior = row["prior_attempts"]
        if isinstance(prior, str):
            prior = json.loads(prior)
        prior_views = tuple(AttemptView.from_row(a) for a in prior)
    return ClaimResult(
        todo=TodoView.from_row(row),
        attempt_seq=row["attempt_seq"],
        attempts_total=row["attempts_total"],
        prior_attempts=prior_views,
        took_over=took_over,
        lease_token=lease_token,
    )


def _claim_params(
    *,
    owner: str,
    lease_ttl_seconds: int | None,
    claimant: str | None,
    session: str | None,
    require_fence: bool,
    claimer_kind: str,
    claimer_endpoint_id: UUID | None,
    trace_id: bytes | None = None,
) -> tuple[dict[str, Any], str | None]:
    token, token_hash = fence.mint() if require_fence else (None, None)
    if trace_id is not None and (len(trace_id) != TRACE_ID_BYTES or not any(trace_id)):
        raise InvalidInput("trace_id", f"must be {TRACE_ID_BYTES} bytes, not all zero")
    params = {
        "owner": check_name("owner", owner, OWNER_MAX_BYTES),
        "ttl_seconds": _ttl(lease_ttl_seconds),
        "claimer_kind": claimer_kind,
        "claimer_endpoint_id": claimer_endpoint_id,
        "claimer_session": rules.claimant(session),
        "claimant": rules.claimant(claimant),
        "token_hash": token_hash,
        "attempts_cap": runtime_settings.current().attempts_max_per_todo,
        "trace_id": trace_id,
    }
    return params, token


def _claimed(
    row: dict[str, Any], token: str | None, transition: str, activity: str | None = None
) -> ClaimResult:
    result = _claim_result(row, token)
    closes = ("lease_expired", "requeued") if result.took_over else None
    _counted(transition, closes, activity=activity)
    return result


# --- creation --------------------------------------------------------------------------------


def create(
    endpoint_id: UUID,
    *,
    queue: str,
    title: str = "",
    payload: Any = None,
    work_order: str = "",
    max_attempts: int = 5,
    event_id: int | None = None,
    routing_trace: Any = None,
    assignee: str | None = None,
) -> TodoView:
    """Create a pending todo on a live endpoint's queue and ring the doorbell."""
    check_name("queue", queue)
    if not isinstance(title, str) or len(title.encode()) > TITLE_MAX_BYTES:
        raise InvalidInput("title", f"must be a string of at most {TITLE_MAX_BYTES} bytes")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
        raise InvalidInput("max_attempts", "must be an integer")
    if not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
        raise InvalidInput("max_attempts", f"must be between 1 and {MAX_ATTEMPTS_LIMIT}")
    params = {
        "id": new_todo_id(),
        "endpoint_id": endpoint_id,
        "queue": queue,
        "title": title.replace("\x00", ""),
        "event_id": event_id,
        "payload": _jsonb("payload", {} if payload is None else payload),
        "work_order": (work_order or "").replace("\x00", ""),
        "routing_trace": _jsonb("routing_trace", routing_trace),
        "assignee": None if assignee is None else check_name("assignee", assignee, OWNER_MAX_BYTES),
        "max_attempts": max_attempts,
    }
    rows = fetch_all(CREATE, params)
    if not rows:
        raise InvalidInput("endpoint", "unknown or revoked")
    _counted("create")
    return TodoView.from_row(rows[0])


# --- agent transitions (the holder; fenced when the claim asked for it) ----------------------


def claim_next(
    endpoint_id: UUID,
    queues: Sequence[str],
    *,
    owner: str,
    lease_ttl_seconds: int | None = None,
    claimant: str | None = None,
    session: str | None = None,
    require_fence: bool = False,
    trace_id: bytes | None = None,
) -> ClaimResult | None:
    """Claim the oldest claimable todo on ``queues``; None when there is nothing to claim.

    ``trace_id`` (16 bytes) is the new attempt's trace: spans of it bind to the attempt.
    """
    if isinstance(queues, str) or not queues:
        raise InvalidInput("queues", "must be a non-empty list of queue names")
    # Distinct, in the order given: claim_next_queues.sql reads each queue's heads once.
    queue_list = list(dict.fromkeys(check_name("queues", q) for q in queues))
    params, token = _claim_params(
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
    rows = _run(CLAIM_NEXT if len(queue_list) == 1 else CLAIM_NEXT_QUEUES, params, None)
    if not rows:
        metrics.transition("claim_next", "empty")
        return None
    return _claimed(rows[0], token, "claim_next")


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
    params, token = _claim_params(
        owner=owner,
        lease_ttl_seconds=lease_ttl_seconds,
        claimant=claimant,
        session=session,
        require_fence=require_fence,
        claimer_kind="endpoint",
        claimer_endpoint_id=endpoint_id,
        trace_id=trace_id,
    )
    row = _single("claim", CLAIM, params, Scope.of_endpoint(endpoint_id), todo_id)
    return _claimed(row, token, "claim")


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
    it is counted in the attempt's ``notes_dropped`` instead of stored.
    """
    params = {**_holder(endpoint_id, owner, lease_token), "ttl_seconds": _ttl(lease_ttl_seconds)}
    scope = Scope.of_endpoint(endpoint_id)
    if note is None:
        row = _single("heartbeat", HEARTBEAT, params, scope, todo_id)
        _counted("heartbeat")
        return ReportResult(TodoView.from_row(row), row["attempt_seq"])
    text, truncated = activity_text("note", note)
    current = runtime_settings.current()
    params |= {
        "note": text,
        "note_truncated": truncated,
        "actor_ref": cut_utf8(owner, ACTOR_REF_MAX_BYTES)[0],
        "notes_cap": current.notes_max_per_attempt,
        "activity_cap": current.activity_max_per_todo,
    }
    row = _single("heartbeat", HEARTBEAT_NOTE, params, scope, todo_id)
    _counted("heartbeat", activity="note" if row["noted"] else None)
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


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
        **_holder(endpoint_id, owner, lease_token),
        **_report_params(result, summary, artifact),
    }
    row, replayed = _report("complete", "completed", COMPLETE, params, endpoint_id, todo_id)
    if not replayed:
        _counted("complete", ("completed", "done"))
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def _fail_params(retryable: bool, retry_after_seconds: int | None) -> dict[str, Any]:
    if not isinstance(retryable, bool):
        raise InvalidInput("retryable", "must be a boolean")
    if retry_after_seconds is not None:
        if isinstance(retry_after_seconds, bool) or not isinstance(retry_after_seconds, int):
            raise InvalidInput("retry_after_seconds", "must be an integer")
        if not 1 <= retry_after_seconds <= RETRY_AFTER_MAX_SECONDS:
            raise InvalidInput(
                "retry_after_seconds", f"must be between 1 and {RETRY_AFTER_MAX_SECONDS}"
            )
    current = runtime_settings.current()
    return {
        "retryable": retryable,
        "retry_after_seconds": retry_after_seconds,
        "retry_base_seconds": current.retry_base_seconds,
        "retry_max_seconds": current.retry_max_seconds,
    }


def _failed(
    row: dict[str, Any], transition: str, activity: str | None = None, *, count: bool = True
) -> FailResult:
    out = FailResult(TodoView.from_row(row), row["attempt_seq"])
    if count:
        disposition = "dead_lettered" if out.dead_letter else "retry_scheduled"
        _counted(transition, ("failed", disposition), activity=activity)
    return out


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
        **_holder(endpoint_id, owner, lease_token),
        **_report_params(result, summary, artifact),
        **_fail_params(retryable, retry_after_seconds),
    }
    row, replayed = _report("fail", "failed", FAIL, params, endpoint_id, todo_id)
    return _failed(row, "fail", count=not replayed)


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
        **_holder(endpoint_id, owner, lease_token),
        "summary": text,
        "summary_truncated": truncated,
    }
    row = _single("release", RELEASE, params, Scope.of_endpoint(endpoint_id), todo_id)
    _counted("release", _released(row))
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def _released(row: dict[str, Any]) -> tuple[str, str]:
    """The attempt a release closed: requeued, or dead-lettered when the budget was spent."""
    return ("released", "requeued" if row["state"] == "pending" else "dead_lettered")


# --- A2A ---------------------------------------------------------------------------------------


def interrupt(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    state: str,
    input_request: Any = None,
    lease_token: str | None = None,
) -> ReportResult:
    """Pause the holder's claim awaiting input (or authorization); it is never reaped meanwhile."""
    if state not in INTERRUPT_STATES:
        raise InvalidInput("state", f"must be one of {', '.join(INTERRUPT_STATES)}")
    params = {
        **_holder(endpoint_id, owner, lease_token),
        "to_state": state,
        "input_request": _jsonb("input_request", input_request),
        **_by_endpoint(owner, "interrupt"),
    }
    row = _single("interrupt", INTERRUPT, params, Scope.of_endpoint(endpoint_id), todo_id)
    _counted("interrupt", activity="a2a_state")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def resume(
    human_id: int,
    todo_id: str,
    *,
    response: Any = None,
    lease_ttl_seconds: int | None = None,
    actor_id: int | None = None,
) -> ReportResult:
    """The owning human answers an interrupted todo; the holder's lease restarts.

    ``actor_id`` is who answered when it is not ``human_id`` (staff in the admin).
    """
    params = {
        "response": _jsonb("response", response),
        "ttl_seconds": _ttl(lease_ttl_seconds),
        **_by_human(actor_id or human_id, "resume"),
    }
    row = _single("resume", RESUME, params, Scope.of_human(human_id), todo_id)
    _counted("resume", activity="human_action")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def answer(
    endpoint_id: UUID,
    todo_id: str,
    *,
    response: Any,
    requester: str,
    lease_ttl_seconds: int | None = None,
) -> ReportResult:
    """The endpoint's A2A requester answers its interrupted todo (``resume`` in the endpoint's
    scope); the holder's lease restarts and it reads the answer under
    ``input_request.response``. Recorded as an ``a2a_state`` row of ``requester``."""
    params = {
        "response": _jsonb("response", response),
        "ttl_seconds": _ttl(lease_ttl_seconds),
        **_by_endpoint(requester, "resume"),
    }
    scope = Scope.of_endpoint(endpoint_id)
    row = _single("resume", RESUME_BY_REQUESTER, params, scope, todo_id)
    _counted("resume", activity="a2a_state")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def reject(
    endpoint_id: UUID,
    todo_id: str,
    *,
    owner: str,
    result: Any = None,
    summary: str | None = None,
    lease_token: str | None = None,
) -> ReportResult:
    """The holder refuses the task for good; its attempt closes failed/dead_lettered."""
    text, truncated = rules.summary(summary)
    params = {
        **_holder(endpoint_id, owner, lease_token),
        "result": _jsonb("result", result),
        "summary": text,
        "summary_truncated": truncated,
        **_by_endpoint(owner, "reject", summary),
    }
    row = _single("reject", REJECT, params, Scope.of_endpoint(endpoint_id), todo_id)
    _counted("reject", ("failed", "dead_lettered"), activity="a2a_state")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


# --- humans ------------------------------------------------------------------------------------


def retry(human_id: int, todo_id: str, *, actor_id: int | None = None) -> ReportResult:
    """Send a failed, canceled or rejected todo back to pending with a fresh budget.

    ``actor_id`` is who pressed retry when it is not ``human_id`` (staff in the admin).
    """
    params = _by_human(actor_id or human_id, "retry")
    row = _single("retry", RETRY, params, Scope.of_human(human_id), todo_id)
    _counted("retry", activity="human_action")
    return ReportResult(TodoView.from_row(row), None)


def cancel(
    scope: Scope, todo_id: str, *, reason: str | None = None, actor_id: int | None = None
) -> ReportResult:
    """Cancel an unfinished todo (a human from the Board, or the endpoint over A2A).

    A human's cancel is recorded as a ``human_action`` of ``actor_id`` (default: the scope's
    human), an endpoint's as an ``a2a_state`` change.
    """
    text, truncated = rules.summary(reason)
    params = {"summary": text, "summary_truncated": truncated}
    if scope.endpoint_id is not None:
        params |= _activity(
            "a2a_state",
            "endpoint",
            f"endpoint:{scope.endpoint_id}",
            "cancel",
            message=reason,
            message_field="reason",
        )
        kind = "a2a_state"
    else:
        assert scope.human_id is not None
        params |= _activity(
            "human_action",
            "human",
            f"human:{actor_id or scope.human_id}",
            "cancel",
            message=reason,
            message_field="reason",
        )
        kind = "human_action"
    row = _single("cancel", CANCEL[scope.is_endpoint], params, scope, todo_id)
    closes = ("canceled", "canceled") if row["attempt_seq"] is not None else None
    _counted("cancel", closes, activity=kind)
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def revoke_endpoint(human_id: int, endpoint_id: UUID) -> RevokeResult:
    """Revoke an endpoint its human owns; dead-letter its unfinished todos.

    Revoking an endpoint already revoked, or one the human does not own, changes nothing and
    returns ``endpoint_revoked=False``.
    """
    row = fetch_one(REVOKE_ENDPOINT, {"endpoint_id": endpoint_id, "scope_human_id": human_id})
    assert row is not None  # the statement always returns one row
    dead = tuple(row["dead_lettered"])
    # Count the attempts the statement closed, not the todos it dead-lettered: a pending todo
    # is dead-lettered too but has no open attempt, and counting it overstated the metric.
    closed = int(row["attempts_closed"])
    if row["revoked"]:
        _counted("revoke_endpoint")
        if closed:
            transaction.on_commit(
                lambda: metrics.attempt_closed("revoked", "dead_lettered", closed)
            )
    return RevokeResult(bool(row["revoked"]), dead)


def operator_claim(
    human_id: int,
    todo_id: str,
    *,
    lease_ttl_seconds: int | None = None,
    claimant: str | None = None,
    actor_id: int | None = None,
    trace_id: bytes | None = None,
) -> ClaimResult:
    """The owning human claims a todo from the Board (claimer_kind 'owner', never fenced).

    Every operator function records a ``human_action`` of ``actor_id`` (default ``human_id``;
    staff acting in the admin pass themselves), in the same statement as the transition.
    """
    params, _ = _claim_params(
        owner=f"human:{human_id}",
        lease_ttl_seconds=lease_ttl_seconds,
        claimant=claimant,
        session=None,
        require_fence=False,
        claimer_kind="owner",
        claimer_endpoint_id=None,
        trace_id=trace_id,
    )
    params |= _by_human(actor_id or human_id, "claim")
    row = _single("operator_claim", OPERATOR_CLAIM, params, Scope.of_human(human_id), todo_id)
    return _claimed(row, None, "operator_claim", activity="human_action")


def operator_extend(
    human_id: int,
    todo_id: str,
    *,
    lease_ttl_seconds: int | None = None,
    actor_id: int | None = None,
) -> ReportResult:
    """Extend the lease of a claimed todo, whoever holds it."""
    params = {"ttl_seconds": _ttl(lease_ttl_seconds), **_by_human(actor_id or human_id, "extend")}
    row = _single("operator_extend", OPERATOR_EXTEND, params, Scope.of_human(human_id), todo_id)
    _counted("operator_extend", activity="human_action")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def operator_complete(
    human_id: int,
    todo_id: str,
    *,
    result: Any = None,
    summary: str | None = None,
    artifact: str | None = None,
    actor_id: int | None = None,
) -> ReportResult:
    """Complete a claimed todo, whoever holds it."""
    params = {
        **_report_params(result, summary, artifact),
        **_by_human(actor_id or human_id, "complete", summary),
    }
    row = _single("operator_complete", OPERATOR_COMPLETE, params, Scope.of_human(human_id), todo_id)
    _counted("operator_complete", ("completed", "done"), activity="human_action")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def operator_fail(
    human_id: int,
    todo_id: str,
    *,
    result: Any = None,
    summary: str | None = None,
    artifact: str | None = None,
    retryable: bool = True,
    retry_after_seconds: int | None = None,
    actor_id: int | None = None,
) -> FailResult:
    """Fail a claimed todo, whoever holds it."""
    params = {
        **_report_params(result, summary, artifact),
        **_fail_params(retryable, retry_after_seconds),
        **_by_human(actor_id or human_id, "fail", summary),
    }
    row = _single("operator_fail", OPERATOR_FAIL, params, Scope.of_human(human_id), todo_id)
    return _failed(row, "operator_fail", activity="human_action")


def operator_release(
    human_id: int, todo_id: str, *, summary: str | None = None, actor_id: int | None = None
) -> ReportResult:
    """Put a claimed todo back on its queue, whoever holds it (the last allowed attempt
    dead-letters it, as the holder's release does)."""
    text, truncated = rules.summary(summary)
    params = {
        "summary": text,
        "summary_truncated": truncated,
        **_by_human(actor_id or human_id, "release", summary),
    }
    row = _single("operator_release", OPERATOR_RELEASE, params, Scope.of_human(human_id), todo_id)
    _counted("operator_release", _released(row), activity="human_action")
    return ReportResult(TodoView.from_row(row), row["attempt_seq"])


def operator_retry(human_id: int, todo_id: str, *, actor_id: int | None = None) -> ReportResult:
    return retry(human_id, todo_id, actor_id=actor_id)


def operator_cancel(
    human_id: int, todo_id: str, *, reason: str | None = None, actor_id: int | None = None
) -> ReportResult:
    return cancel(Scope.of_human(human_id), todo_id, reason=reason, actor_id=actor_id)


# --- bulk actions and queues (humans) ------------------------------------------------------------

# The attempt a bulk cancel closed: the todo's open one when it was in flight (the target
# requires that attempt to be visible, so the statement's `closed` arm closed it), else none.
_BULK_CANCELED_ATTEMPT = (
    "CASE WHEN upd.from_state IN ("
    + ", ".join(f"'{state}'" for state in IN_FLIGHT_STATES)
    + ") THEN upd.attempts_total END"
)


@cache
def bulk_statement(action: str, selection: str) -> str:
    """The statement of one bulk action (``retry``, ``cancel``) for one filter combination
    (``TodoFilters.where``'s text), in the human's scope, built once per combination."""
    if action == "retry":
        return _recorded(
            "bulk_retry",
            attempt="NULL::int",
            from_state="upd.from_state",
            scope=HUMAN_SCOPE_SQL,
            selection=selection,
        )
    if action == "cancel":
        return _recorded(
            "bulk_cancel",
            attempt=_BULK_CANCELED_ATTEMPT,
            from_state="upd.from_state",
            scope=HUMAN_SCOPE_SQL,
            selection=selection,
            bulk_canceled_attempt=_BULK_CANCELED_ATTEMPT,
        )
    raise InvalidInput("action", "must be retry or cancel")


def _bulk_params(seen_at: dt.datetime, limit: int) -> dict[str, Any]:
    if not isinstance(seen_at, dt.datetime) or seen_at.tzinfo is None:
        raise InvalidInput("seen_at", "must be the time of the count, with its time zone")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= BULK_MAX:
        raise InvalidInput("limit", f"must be between 1 and {BULK_MAX}")
    return {"seen_at": seen_at, "limit": limit}


def _bulk(
    action: str,
    human_id: int,
    filters: TodoFilters,
    params: dict[str, Any],
) -> list[dict[str, Any]]:
    if filters.matches_nothing:  # PostgreSQL could not compare the value: nothing matches
        return []
    selection, selection_params = filters.where()
    scope = Scope.of_human(human_id)
    rows = _run(
        bulk_statement(action, selection), {**params, **selection_params, **scope.params}, None
    )
    return rows


def bulk_retry(
    human_id: int,
    filters: TodoFilters,
    *,
    seen_at: dt.datetime,
    limit: int = BULK_MAX,
    actor_id: int | None = None,
) -> BulkResult:
    """Retry the dead letters of the human's todos that ``filters`` select, at most ``limit``
    (oldest first), each as ``retry`` retries one, in one statement (bulk_retry.sql).

    ``seen_at`` is the time of the count the human confirmed (``queries.bulk_count``): a todo
    dead-lettered after it is left alone. Each retry is a ``human_action`` row of ``actor_id``
    (default ``human_id``) marked ``bulk``; the doorbell rings once per queue refilled.
    """
    params = {
        **_bulk_params(seen_at, limit),
        **_activity(
            "human_action", "human", f"human:{actor_id or human_id}", "retry", detail={"bulk": True}
        ),
    }
    rows = _bulk("retry", human_id, filters, params)
    if rows:
        _counted("retry", n=len(rows), activity="human_action")
    return BulkResult(tuple(r["id"] for r in rows))


def bulk_cancel(
    human_id: int,
    filters: TodoFilters,
    *,
    seen_at: dt.datetime,
    reason: str | None = None,
    limit: int = BULK_MAX,
    actor_id: int | None = None,
) -> BulkResult:
    """Cancel the unfinished todos of the human's that ``filters`` select, at most ``limit``
    (oldest first), each as ``cancel`` cancels one (an open attempt closes canceled/canceled),
    in one statement (bulk_cancel.sql).

    ``seen_at`` is the time of the count the human confirmed: a todo created or claimed after
    it is left alone, and so is one locked by a transition at that moment. Each cancel is a
    ``human_action`` row of ``actor_id`` (default ``human_id``) marked ``bulk``.
    """
    text, truncated = rules.summary(reason)
    params = {
        **_bulk_params(seen_at, limit),
        "summary": text,
        "summary_truncated": truncated,
        **_activity(
            "human_action",
            "human",
            f"human:{actor_id or human_id}",
            "cancel",
            message=reason,
            message_field="reason",
            detail={"bulk": True},
        ),
    }
    rows = _bulk("cancel", human_id, filters, params)
    if rows:
        _counted("cancel", n=len(rows), activity="human_action")
        closed = sum(1 for r in rows if r["attempt_seq"] is not None)
        if closed:
            transaction.on_commit(lambda: metrics.attempt_closed("canceled", "canceled", closed))
    return BulkResult(tuple(r["id"] for r in rows))


def _queue_params(
    endpoint_id: UUID, queue: str, human_id: int | None, actor_id: int | None
) -> dict[str, Any]:
    params: dict[str, Any] = {"endpoint_id": endpoint_id, "queue": check_name("queue", queue)}
    if human_id is None:
        # The system: a command run on the server (manage.py queue without --as).
        return params | {"actor_kind": "system", "actor_ref": "manage.py"}
    return params | {
        "actor_kind": "human",
        "actor_ref": f"human:{actor_id or human_id}",
        "scope_human_id": human_id,
    }


def pause_queue(
    endpoint_id: UUID, queue: str, *, human_id: int | None, actor_id: int | None = None
) -> QueueChange:
    """Pause an endpoint's queue: no agent's claim takes its todos (claim_next skips it, a claim
    by id is refused) and no ring goes out for them until it is resumed. Leases already held
    run on. Pausing a paused queue changes nothing (``changed`` False).

    ``human_id`` is the owning human (their own endpoints only: another's reads as unknown),
    recorded as the pause's actor (``actor_id`` when staff act for them); None is the system.
    Raises ``InvalidInput`` for an endpoint unknown in that scope.
    """
    params = _queue_params(endpoint_id, queue, human_id, actor_id)
    row = fetch_one(PAUSE_QUEUE[human_id is not None], params)
    assert row is not None  # the statement always returns one row
    if not row["found"]:
        raise InvalidInput("endpoint", "unknown")
    return QueueChange(endpoint_id, queue, paused=True, changed=bool(row["paused"]))


def resume_queue(
    endpoint_id: UUID, queue: str, *, human_id: int | None, actor_id: int | None = None
) -> QueueChange:
    """Resume a paused queue: its todos are claimable again, and the claimers waiting on it
    are rung at commit (once for the queue). Resuming a queue not paused changes nothing.
    ``human_id`` and ``actor_id`` as ``pause_queue``'s."""
    params = _queue_params(endpoint_id, queue, human_id, actor_id)
    row = fetch_one(RESUME_QUEUE[human_id is not None], params)
    assert row is not None  # the statement always returns one row
    if not row["found"]:
        raise InvalidInput("endpoint", "unknown")
    return QueueChange(endpoint_id, queue, paused=False, changed=bool(row["resumed"]))


# --- sweeps ------------------------------------------------------------------------------------


def reap(limit: int = SWEEP_BATCH) -> SweepResult:
    """Reap up to ``limit`` lapsed leases: requeue them, or dead-letter those out of budget."""
    rows = _run(REAP, {"limit": limit}, None)
    requeued = tuple(r["id"] for r in rows if r["state"] == "pending")
    dead = tuple(r["id"] for r in rows if r["state"] == "failed")

    def count() -> None:
        if requeued:
            metrics.transition("reap", "requeued", len(requeued))
            metrics.attempt_closed("reaped", "requeued", len(requeued))
        if dead:
            metrics.transition("reap", "dead_lettered", len(dead))
            metrics.attempt_closed("reaped", "dead_lettered", len(dead))

    transaction.on_commit(count)
    return SweepResult(requeued=requeued, dead_lettered=dead)


def requeue_due_retries(limit: int = SWEEP_BATCH) -> tuple[str, ...]:
    """Move up to ``limit`` failed todos whose retry is due back to pending; return their ids.

    Each requeue is recorded as a ``retried`` activity row of the system.
    """
    params = {"limit": limit, **_activity("retried", "system", "sweeper", "requeue")}
    rows = fetch_all(REQUEUE_DUE_RETRIES, params)
    ids = tuple(r["id"] for r in rows)
    if ids:
        _counted("requeue_due_retries", n=len(ids), activity="retried")
    return ids


def ring(
    todo_id: str, *, reason: str, ringer: str, subscribers: int | None = None
) -> RingResult | None:
    """Ring a pending todo if the shared gate is open (``ring.sql``); None when not rung.

    The gate is the todo's ``last_ringed_at``: at most one ring per todo per
    ``ring_gate_seconds`` across every process. A ring writes ``last_ringed_at``,
    ``ring_attempts``, a ``rung`` activity row and (for an endpoint with a push URL) a queued
    push, and notifies ``todo_rung`` at commit, which every process's doorbell hands to its own
    open MCP streams. Never waits: a todo locked by a claim in progress is not rung. A ring the
    gate refuses is owed, and ``ring_due`` rings it when the gate opens.
    """
    current = runtime_settings.current()
    row = fetch_one(
        RING,
        {
            "id": todo_id,
            "gate_seconds": current.ring_gate_seconds,
            "ring_id": uuid4(),
            "reason": reason,
            "ringer": ringer,
            "subscribers": subscribers,
            "activity_cap": current.activity_max_per_todo,
        },
    )
    if row is None:
        return None
    transaction.on_commit(lambda: metrics.activity("rung"))
    return RingResult(row["id"], row["endpoint_id"], row["queue"], reason, row["ring_attempts"])


def ring_due(scan: str, limit: int = SWEEP_BATCH) -> list[RingResult]:
    """Ring up to ``limit`` pending todos that ``scan`` finds due a ring (``ring_due.sql``); each
    writes what ``ring`` writes, with ``scan`` as its reason.

    ``gate``: a ring the gate held back, now that it is open. ``push``: a first ring for a push
    endpoint's todo nobody's stream rang. ``unclaimed``: a re-ring of a todo left unclaimed
    ``ring_unclaimed_after_seconds``, with backoff, at most ``ring_unclaimed_max_attempts``
    rings in all.
    """
    current = runtime_settings.current()
    rows = fetch_all(
        RING_DUE[scan],
        {
            "gate_seconds": current.ring_gate_seconds,
            "unclaimed_seconds": current.ring_unclaimed_after_seconds,
            "max_rings": current.ring_unclaimed_max_attempts,
            "limit": limit,
            "reason": scan,
            "subscribers": None,
            "activity_cap": current.activity_max_per_todo,
        },
    )
    if rows:
        n = len(rows)
        transaction.on_commit(lambda: metrics.activity("rung", n))
    return [
        RingResult(r["id"], r["endpoint_id"], r["queue"], r["reason"], r["ring_attempts"])
        for r in rows
    ]


def claim_pushes(limit: int, lease_seconds: float) -> list[dict[str, Any]]:
    """Take up to ``limit`` queued push rings that are due (``claim_pushes.sql``), counting a
    try each; send them after this commits (``todos/push.py``)."""
    return fetch_all(CLAIM_PUSHES, {"limit": limit, "lease_seconds": lease_seconds})


def record_push(
    push_id: int,
    *,
    delivered: bool,
    retry: bool,
    status_code: int | None,
    error: str,
    duration_ms: int | None,
    backoff_seconds: float,
    keep: int,
) -> dict[str, Any] | None:
    """Record one try of a push ring and move the endpoint's circuit breaker
    (``record_push.sql``); return the breaker's ``failures`` and ``open_until``."""
    current = runtime_settings.current()
    return fetch_one(
        RECORD_PUSH,
        {
            "id": push_id,
            "delivered": delivered,
            "retry": retry,
            "status_code": status_code,
            "error": cut_utf8(error, ACTIVITY_TEXT_MAX_BYTES)[0] if error else "",
            "duration_ms": duration_ms,
            "backoff_seconds": backoff_seconds,
            "breaker_failures": current.push_breaker_failures,
            "breaker_seconds": current.push_breaker_seconds,
            "keep": keep,
        },
    )


def unclaim_pushes(push_ids: Sequence[int]) -> None:
    """Hand back push rings taken but not tried (``unclaim_pushes.sql``)."""
    if push_ids:
        fetch_all(UNCLAIM_PUSHES, {"ids": list(push_ids)})


def queue_test_push(endpoint_id: UUID) -> UUID | None:
    """Queue a test push ring for the endpoint; its ring id, or None without a push URL."""
    ring_id = uuid4()
    row = fetch_one(QUEUE_TEST_PUSH, {"endpoint_id": endpoint_id, "ring_id": ring_id})
    return ring_id if row is not None else None
