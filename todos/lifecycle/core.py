"""What every transition of the lifecycle shares: running its statement, classifying a miss,
counting on commit, building its result; and the argument for why they are safe together.

The lifecycle (``todos/lifecycle/``) is the only writer of ``todos``, ``todo_attempts``,
``todo_activity`` and ``queue_pauses``. One function per transition, each running one SQL
statement (``todos/sql/<name>.sql``, loaded by ``statements.py``) in one round trip:
data-modifying CTEs open, close and prune attempts in the same statement that moves the todo,
so they commit together or not at all.

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
Every statement that changes what a page or a consumer shows returns the announcement of each
todo it changed in its ``notified`` column (``todos/sql/_notify.sql``, ``_notify_rung.sql``);
``fetch_all`` hands them to the process's announcer once the transaction commits, which sends
them to every process's listener from a notify-only transaction of its own
(``switchboard/lib/changefeed.py``, docs/decisions/0033-announce-after-commit.md). A plain
heartbeat does not: it changes nothing a page shows, and it is the hottest path.

Misses
------
A statement that matched nothing is classified after the fact (``in_scope.sql``): no row in the
caller's scope → ``TodoNotFound``; a row that did not match → ``LeaseConflict``. A wrong fence
token is exactly "not the holder". The holder whose claim someone else ended (canceled, timed
out) learns it instead (``ended.sql`` → ``TodoEnded``), and only the holder: the read runs on
the miss path, so the hot path pays nothing for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, transaction
from psycopg.types.json import Jsonb

from attempts import fence, rules
from attempts.queries import recent_closed_attempts
from switchboard import actors, runtime_settings
from switchboard.lib import jsonlimits, metrics, redact
from switchboard.lib.actors import Actor
from switchboard.lib.errors import (
    AttemptInvariantViolated,
    InvalidInput,
    LeaseConflict,
    TodoEnded,
    TodoNotFound,
)
from switchboard.lib.sql import after_commit, fetch_all, fetch_one
from switchboard.lib.text import cut_utf8
from switchboard.scope import Scope
from todos.lifecycle.statements import ENDED, IN_ENDPOINT_SCOPE, IN_HUMAN_SCOPE
from todos.limits import (
    ACTIVITY_TEXT_MAX_BYTES,
    LEASE_TTL_MAX_SECONDS,
    LEASE_TTL_MIN_SECONDS,
    OWNER_MAX_BYTES,
    PRIOR_ATTEMPTS,
    RETRY_AFTER_MAX_SECONDS,
    TRACE_ID_BYTES,
    check_name,
)
from todos.types import AttemptView, ClaimResult, FailResult, TodoView

# A note may span lines; any other control character (NUL included) is refused.
_NOTE_CONTROLS_ALLOWED = frozenset("\n\t")
_ONE_OPEN_KEY = re.compile(r"\(todo_id\)=\(([^)]*)\)")
# The holder's own transitions through run_single (complete and fail classify in
# agent._report): a miss may be a claim someone else ended (holder_miss).
_HOLDER_TRANSITIONS = frozenset({"heartbeat", "release", "interrupt", "reject"})


def jsonb(field: str, value: Any) -> Jsonb | None:
    """Wrap ``value`` for a jsonb parameter, refusing what jsonb cannot hold or MCP answer.

    The depth bound (``jsonlimits``) makes a todo whose claim could not be encoded impossible:
    it is refused here, at creation, not after a claim has committed.
    """
    if value is None:
        return None
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        if (reason := jsonlimits.problem(value)) is not None:
            raise InvalidInput(field, reason) from None
        raise InvalidInput(field, f"is not JSON ({exc})") from None
    # The full check walks the value (a tenth of a complete's own Python time); the text just
    # made shows when it cannot find anything. json.dumps escapes every character outside ASCII
    # as \uXXXX, so a NUL or a lone surrogate leaves a "\u" in the text, and a value cannot be
    # nested deeper than the brackets it has (those inside strings only raise the count).
    may_fail = "\\u" in text or text.count("[") + text.count("{") > jsonlimits.MAX_DEPTH
    if may_fail and (reason := jsonlimits.problem(value)) is not None:
        raise InvalidInput(field, reason)
    # Send the text just made (psycopg's default json.dumps would make the same text again).
    return Jsonb(value, dumps=lambda _value: text)


def lease_ttl(seconds: int | None) -> int:
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


def extend_ttl(seconds: int | None) -> dict[str, Any]:
    """A heartbeat's or extend's TTL parameters (``_lease_extended.sql``): the TTL it names,
    checked, or none, to extend by the TTL its claim chose (``todos.lease_ttl_seconds``), the
    runtime default only for a claim made before that was kept."""
    return {
        "ttl_seconds": None if seconds is None else lease_ttl(seconds),
        "ttl_default": runtime_settings.current().lease_ttl_default_seconds,
    }


def report_params(result: Any, summary: str | None, artifact: str | None) -> dict[str, Any]:
    text, truncated = rules.summary(summary)
    if text is None and settings.SWITCHBOARD_ATTEMPT_SUMMARY_FROM_RESULT:
        text, truncated = rules.summary_from_result(result)
    return {
        "result": jsonb("result", result),
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


def activity_params(
    kind: str,
    actor: Actor,
    action: str | None,
    *,
    message: str | None = None,
    message_field: str = "summary",
    detail: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The parameters of ``_activity_arm.sql``: a ``kind`` row of ``actor`` (its one spelling,
    switchboard/lib/actors.py); ``message_field`` names the message in errors."""
    text, truncated = activity_text(message_field, message, strict=False)
    return {
        "activity_kind": kind,
        **actor_params(actor),
        "activity_message": text,
        "activity_truncated": truncated,
        "activity_action": action,
        "activity_detail": jsonb("detail", dict(detail or {})),
    }


def actor_params(actor: Actor) -> dict[str, str]:
    """``actor_kind`` and ``actor_ref``: who acted, as every row that names an actor stores it."""
    return {"actor_kind": actor.column_kind, "actor_ref": str(actor)}


def by_human(human_id: int, action: str, message: str | None = None) -> dict[str, Any]:
    """A ``human_action`` row: who pressed the button, and what it did."""
    return activity_params("human_action", Actor.human(human_id), action, message=message)


def by_endpoint(actor: Actor, action: str, message: str | None = None) -> dict[str, Any]:
    """An ``a2a_state`` row: the holder (``Actor.endpoint``) or the A2A requester
    (``Actor.requester``) moved the todo through an A2A state."""
    return activity_params("a2a_state", actor, action, message=message)


def holder_params(endpoint_id: UUID, owner: str, lease_token: str | None) -> dict[str, Any]:
    return {
        "endpoint_id": endpoint_id,
        "owner": check_name("owner", owner, OWNER_MAX_BYTES),
        "token_hash": fence.digest(lease_token),
    }


def run(sql: str, params: Mapping[str, Any], todo_id: str | None) -> list[dict[str, Any]]:
    """Run a transition's statement; map the deferred constraint's failure to a domain error."""
    try:
        return fetch_all(sql, params)
    except IntegrityError as exc:
        _reraise(exc, todo_id)
        raise


def _invariant_error(exc: IntegrityError, todo_id: str | None) -> Exception:
    """``AttemptInvariantViolated`` if ``exc`` is the one-open-attempt constraint;
    ``InvalidInput`` if a retry would make a second unfinished todo of one dedupe key (the
    finished todo's key is held by a newer one: ``todos_dedupe_idx``); else ``exc``."""
    cause = exc.__cause__
    diag = getattr(cause, "diag", None)
    if diag is not None and diag.constraint_name == "todos_dedupe_idx":
        return InvalidInput(
            "dedupe_key", "another unfinished todo of this endpoint holds the same dedupe key"
        )
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


def miss(scope: Scope, todo_id: str, transition: str) -> Exception:
    metrics.transition(transition, "miss")
    if fetch_one(
        IN_ENDPOINT_SCOPE if scope.is_endpoint else IN_HUMAN_SCOPE, {"id": todo_id, **scope.params}
    ):
        return LeaseConflict(todo_id, transition)
    return TodoNotFound(todo_id)


def ended(todo_id: str, holder: Mapping[str, Any]) -> TodoEnded | None:
    """``TodoEnded`` when the holder's claim (``holder``: endpoint_id, owner, token_hash) on
    ``todo_id`` was ended by someone else, else None (``ended.sql``)."""
    scope = Scope.of_endpoint(holder["endpoint_id"])
    row = fetch_one(ENDED, {"id": todo_id, **holder, **scope.params})
    if row is None:
        return None
    by = row["actor_ref"] or "sweeper"
    # Who, as people read it: one more read on this rare path, none for the sweeper or a
    # command (switchboard/actors.py).
    return TodoEnded(todo_id, row["outcome"], row["reason"], by, actors.resolve([by]).label(by))


def holder_miss(todo_id: str, transition: str, params: Mapping[str, Any]) -> Exception:
    """Classify the holder's miss: ``TodoEnded`` when its claim was ended by someone else, else
    as ``miss`` (``params`` hold the holder's endpoint_id, owner and token_hash)."""
    holder = {k: params[k] for k in ("endpoint_id", "owner", "token_hash")}
    if (error := ended(todo_id, holder)) is not None:
        metrics.transition(transition, "miss")
        return error
    return miss(Scope.of_endpoint(holder["endpoint_id"]), todo_id, transition)


def counted(
    transition: str,
    closes: tuple[str, str] | None = None,
    n: int = 1,
    activity: str | None = None,
) -> None:
    """Count a transition (the attempts it closed, the activity rows it wrote) on commit."""
    after_commit(_count, transition, closes, n, activity)


def _count(transition: str, closes: tuple[str, str] | None, n: int, activity: str | None) -> None:
    metrics.transition(transition, "ok", n)
    if closes is not None:
        metrics.attempt_closed(*closes, n)
    if activity is not None:
        metrics.activity(activity, n)


def run_single(
    transition: str,
    sql: str,
    params: dict[str, Any],
    scope: Scope,
    todo_id: str,
    *,
    again_on_miss: bool = False,
) -> dict[str, Any]:
    """Run a single-todo statement (its announcement goes out after commit: ``_notify.sql``).

    ``again_on_miss``: a miss runs the statement once more before it is classified. A statement
    that waited on the todo's row lock re-checks the row at its newest version, but reads
    ``todo_attempts`` from the snapshot it took before: when the lock was a claim's, the
    attempt that claim opened is invisible to its current-attempt guard
    (``todos/sql/_current_attempt.sql``) and the held todo looks out of reach. The second run
    takes a new snapshot. For the transitions whose intent outlives a claim (a cancel); a miss
    changed nothing, so running it again is safe.
    """
    bound = {"id": todo_id, **params, **scope.params}
    rows = run(sql, bound, todo_id)
    if not rows and again_on_miss:
        rows = run(sql, bound, todo_id)
    if not rows:
        if transition in _HOLDER_TRANSITIONS:
            # The holder's own transition: it may learn that someone else ended its claim.
            raise holder_miss(todo_id, transition, params)
        raise miss(scope, todo_id, transition)
    return rows[0]


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


def claim_params(
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
        "ttl_seconds": lease_ttl(lease_ttl_seconds),
        "claimer_kind": claimer_kind,
        "claimer_endpoint_id": claimer_endpoint_id,
        "claimer_session": rules.claimant(session),
        "claimant": rules.claimant(claimant),
        "token_hash": token_hash,
        "attempts_cap": runtime_settings.current().attempts_max_per_todo,
        "trace_id": trace_id,
    }
    return params, token


def claimed_result(
    row: dict[str, Any], token: str | None, transition: str, activity: str | None = None
) -> ClaimResult:
    result = _claim_result(row, token)
    # A takeover closed the dead attempt, the newest of prior_attempts: lease_expired, or
    # timed_out when its run timeout ended it (_claim_tail.sql).
    closes = None
    if result.took_over:
        closes = (result.prior_attempts[0].outcome or "lease_expired", "requeued")
    counted(transition, closes, activity=activity)
    return result


def fail_params(retryable: bool, retry_after_seconds: int | None) -> dict[str, Any]:
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


def fail_result(
    row: dict[str, Any], transition: str, activity: str | None = None, *, count: bool = True
) -> FailResult:
    out = FailResult(TodoView.from_row(row), row["attempt_seq"])
    if count:
        disposition = "dead_lettered" if out.dead_letter else "retry_scheduled"
        counted(transition, ("failed", disposition), activity=activity)
    return out


def release_closes(row: dict[str, Any]) -> tuple[str, str]:
    """The attempt a release closed: requeued, or dead-lettered when the budget was spent."""
    return ("released", "requeued" if row["state"] == "pending" else "dead_lettered")
