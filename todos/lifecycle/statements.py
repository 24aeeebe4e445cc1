"""The lifecycle's statements, loaded once at import from ``todos/sql/`` (a missing file or
fragment fails start-up), their shared fragments spliced in at load, never per call.

Each variant a caller chooses between is a constant of its own, named for who runs it
(``CANCEL_BY_HUMAN``, ``CANCEL_BY_REQUESTER``, ``PAUSE_QUEUE_BY_SYSTEM`` …), so a call site says
which statement it runs. ``manage.py sql NAME`` prints any of them as it runs (``named()``).

Agent variants guard on the holder (endpoint, owner, fence); operator variants on the human's
scope and are never fenced: the owning human can always recover a stuck attempt.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from switchboard.lib.errors import InvalidInput
from switchboard.lib.sql import load
from switchboard.lib.text import money_sql
from switchboard.scope import (
    ENDPOINT_SCOPE_SQL,
    HUMAN_ENDPOINTS_SQL,
    HUMAN_MANAGES_SQL,
    HUMAN_SCOPE_SQL,
)
from todos.limits import BULK_ACTIONS, PRIOR_ATTEMPTS
from todos.states import IN_FLIGHT_STATES
from todos.types import VIEW_COLUMNS

SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
# The owning human, on the todo's current attempt (see _current_attempt.sql); never fenced.
_OPERATOR_GUARD = HUMAN_SCOPE_SQL + " AND @{current_attempt}"


# A todo's announcement on the change feed (``_notify.sql``), one fragment for both kinds: the
# statement returns it in its ``notified`` column, and ``switchboard.lib.sql`` announces it
# after commit (docs/decisions/0033-announce-after-commit.md).
NOTIFY_READY_SQL = load(SQL_DIR, "_notify", notify_kind="'ready'")
NOTIFY_CHANGED_SQL = load(SQL_DIR, "_notify", notify_kind="'changed'")


def statement(name: str, **fragments: str) -> str:
    """``todos/sql/<name>.sql`` with its fragments spliced in: the defaults below, which
    ``fragments`` override."""
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
        # The claim's closed attempts, a constant of the statement (its plan's LIMIT).
        "prior_attempts": str(PRIOR_ATTEMPTS),
        "notify_ready": NOTIFY_READY_SQL,
        "notify_changed": NOTIFY_CHANGED_SQL,
        # heartbeat.sql announces only the owning human's extension (OPERATOR_EXTEND).
        "extend_notify": "",
        # The queues whose limits a claim_next honours (_queue_limited.sql): those it asked for.
        "limits_endpoint": "%(endpoint_id)s",
        "limits_queues": "(SELECT %(queues)s::text[])",
        # The lease cap (_lease_cap.sql): the run timeout counts from the claim. A claim's
        # statement says now() (its todo row still holds the previous claim's claimed_at).
        "run_started": "t.claimed_at",
        # The run timeout of the todo t, in seconds, NULL for none: its own, else its queue's
        # default (_queue_run_timeout.sql, docs/decisions/0028-queue-limits.md).
        "run_timeout": "COALESCE(t.run_timeout_seconds, @{queue_run_timeout})",
        # Whether a claim's hold of todo t is one of its queue's max_in_flight slots: the
        # agent's claim read its queue's limited row already (queue_limited), so it costs a
        # scan of that materialized CTE, empty for an unlimited queue (_slot_freed.sql).
        "holds_limited_slot": (
            "EXISTS (SELECT 1 FROM queue_limited ql"
            " WHERE ql.queue = t.queue AND ql.max_in_flight IS NOT NULL)"
        ),
        # The todo's columns the statement's write returns (`upd`): all of them, but in an
        # agent's own transitions (_view).
        "returned": "t.*",
    }
    return load(SQL_DIR, name, **{**defaults, **fragments})


def _view(*extra: str) -> str:
    """What an agent's own transitions (claim, heartbeat, complete, fail, release) return of the
    todo: the columns ``TodoView`` reads (``VIEW_COLUMNS``: not the usage or a tombstone, which
    none of their callers reads), and ``extra``, which the statement reads from ``upd`` itself.
    Each column returned is a value PostgreSQL writes out and psycopg loads and names on every
    call, and ``t.*`` has 17 more (docs/decisions/0045-agent-transitions-return-the-view.md)."""
    return ", ".join(f"t.{name}" for name in (*VIEW_COLUMNS, *extra))


def _recorded(name: str, *, attempt: str, from_state: str, **fragments: str) -> str:
    """A statement that also writes its activity row (``_activity_arm.sql``).

    ``attempt`` and ``from_state`` are SQL expressions over the statement's CTEs: the attempt
    the row names, and the state the todo left.
    """
    return statement(
        name,
        activity=",\n@{activity_arm}",
        activity_bump="activity_seq = t.activity_seq + 1, ",
        activity_attempt=attempt,
        activity_from=from_state,
        **fragments,
    )


CREATE = statement("create")
# One queue (the usual call) and several (docs/decisions/0013-claim-per-queue.md).
# A claim's run timeout starts now (_lease_cap.sql).
_AT_CLAIM = {"run_started": "now()"}
# What an agent's claim returns of the todo: what its ClaimResult reads (_view).
AGENT_VIEW_SQL = _view()
_AGENT_CLAIM = {**_AT_CLAIM, "returned": AGENT_VIEW_SQL}
CLAIM_NEXT = statement("claim_next", **_AGENT_CLAIM)
# The arms a claim that honours no queue limit leaves out: the limited rows' lock, the
# token spend, the slot mark (a queue without limits has no slot to free).
_NO_LIMIT_ARMS = {
    "queue_limited": "queue_limited AS (SELECT WHERE false)",
    "queue_spend": "",
}
# claim_next of one queue that sets no limit, guarded on that (_queue_unlimited.sql): the
# statement an agent's claim runs first; a limited queue gives nothing to it and is claimed
# with CLAIM_NEXT instead (docs/decisions/0044-claim-unlimited-queue.md).
CLAIM_NEXT_UNLIMITED = statement(
    "claim_next",
    queue_limits="@{queue_unlimited}",
    holds_limited_slot="false",
    **_NO_LIMIT_ARMS,
    **_AGENT_CLAIM,
)
CLAIM_NEXT_QUEUES = statement("claim_next_queues", pause_queue="q.queue", **_AGENT_CLAIM)
# A todo's own queue, where a statement reaches the todo first (claim by id, rings).
_ITS_QUEUE = {"pause_endpoint": "t.endpoint_id", "pause_queue": "t.queue"}
# Operator variants, A2A transitions and the retry sweep also write one activity row each
# (``_recorded``): the attempt it names and the state the todo left are expressions over the
# statement's own CTEs.
_HELD = {"attempt": "upd.attempts_total", "from_state": "'claimed'"}
# An agent's claim by id is refused on a paused queue, as claim_next would not take the todo;
# the owning human's is not: a pause stops the agents
# (docs/decisions/0020-queue-pause-and-bulk-actions.md).
# The same for the queue's limits (docs/decisions/0028-queue-limits.md): a claim by id honours
# those of the todo's own queue.
_ITS_LIMITS = {
    "limits_endpoint": "%(scope_endpoint_id)s",
    "limits_queues": "(SELECT ARRAY[q.queue] FROM todos q WHERE q.id = %(id)s)",
}
CLAIM = statement("claim", scope=ENDPOINT_SCOPE_SQL, **_ITS_QUEUE, **_ITS_LIMITS, **_AGENT_CLAIM)
OPERATOR_CLAIM = _recorded(
    "claim",
    attempt="upd.attempts_total",
    from_state="upd.prior_state",
    scope=HUMAN_SCOPE_SQL,
    queue_open="TRUE",
    queue_limits="TRUE",
    **_NO_LIMIT_ARMS,
    # The owner's claim honours no limit but fills a slot all the same (_queue_limits.sql
    # counts every held todo): one probe of the queue's settings row, on a human's click.
    holds_limited_slot=(
        "EXISTS (SELECT 1 FROM queue_settings qs WHERE qs.endpoint_id = t.endpoint_id"
        " AND qs.queue = t.queue AND qs.max_in_flight IS NOT NULL)"
    ),
    **_AT_CLAIM,
)
# Why an agent's claim_next took nothing, queue by queue (docs/decisions/0028-queue-limits.md),
# the earliest not_before of a queue whose work is all scheduled included.
CLAIM_EMPTY = statement("claim_empty")
# An agent's claim that found its limited queue's count stale runs again behind this lock.
LOCK_QUEUE_LIMITS = statement("lock_queue_limits")
LOCK_QUEUE_LIMITS_OF_TODO = statement("lock_queue_limits", **_ITS_LIMITS)
# A heartbeat closes nothing, so it guards on the todo row alone (heartbeat.sql).
HEARTBEAT = statement("heartbeat", guard="@{holder}", returned=_view("attempt_heartbeat_at"))
HEARTBEAT_NOTE = statement(
    "heartbeat_note", guard="@{holder}", returned=_view("attempt_heartbeat_at", "activity_seq")
)
OPERATOR_EXTEND = _recorded(
    "heartbeat", guard=HUMAN_SCOPE_SQL, extend_notify=", @{notify_changed} AS notified", **_HELD
)
COMPLETE = statement("complete", returned=_view("holds_limited_slot"))
OPERATOR_COMPLETE = _recorded("complete", guard=_OPERATOR_GUARD, **_HELD)
FAIL = statement("fail", returned=_view("holds_limited_slot"))
OPERATOR_FAIL = _recorded("fail", guard=_OPERATOR_GUARD, **_HELD)
RELEASE = statement("release", returned=_view("holds_limited_slot"))
OPERATOR_RELEASE = _recorded("release", guard=_OPERATOR_GUARD, **_HELD)
REAP = statement("reap")
# The deadline sweep: finish_by and start_by passed (deadlines.sql).
DEADLINES = statement("deadlines")
# The cost-cap sweep: todos whose cost reached their max_cost_usd (over_cap.sql).
OVER_CAP = statement(
    "over_cap",
    cap_money=money_sql("upd.max_cost_usd"),
    cost_money=money_sql("upd.cost_usd"),
)
# A create that found its dedupe key held reads the todo holding it.
DEDUPE_HIT = statement("dedupe_hit")
RING = statement("ring", **_ITS_QUEUE)
RING_SCANS = ("gate", "push", "not_before", "unclaimed")  # ring_due's scans; see ring_due.sql
RING_DUE = {
    scan: statement("ring_due", due=f"@{{due_{scan}}}", **_ITS_QUEUE) for scan in RING_SCANS
}
REQUEUE_DUE_RETRIES = _recorded("requeue_due_retries", attempt="NULL::int", from_state="'failed'")
RETRY = _recorded("retry", attempt="NULL::int", from_state="upd.from_state", scope=HUMAN_SCOPE_SQL)
# The same retry by the endpoint's requester (MCP's App: a person retries from the chat).
RETRY_BY_REQUESTER = _recorded(
    "retry", attempt="NULL::int", from_state="upd.from_state", scope=ENDPOINT_SCOPE_SQL
)
_CANCELED = {"attempt": "(SELECT seq FROM closed)", "from_state": "upd.from_state"}
# A cancel from the Board (the owning human) or over A2A (the endpoint's requester).
CANCEL_BY_HUMAN = _recorded("cancel", scope=HUMAN_SCOPE_SQL, **_CANCELED)
CANCEL_BY_REQUESTER = _recorded("cancel", scope=ENDPOINT_SCOPE_SQL, **_CANCELED)
# A human erases what their finished todos held and leaves a tombstone (forget.sql).
FORGET = _recorded(
    "forget", attempt="NULL::int", from_state="upd.from_state", scope=HUMAN_SCOPE_SQL
)
# Revoked by a human who manages the endpoint: its owner, or an admin of its team.
REVOKE_ENDPOINT = statement("revoke_endpoint", manages=HUMAN_MANAGES_SQL)
# What a revoked endpoint still holds, dead-lettered as the revoke does (run once after it).
REVOKED_SWEEP = statement("revoked_sweep", manages=HUMAN_MANAGES_SQL)
# A queue's pause and resume: by a human (the endpoints in their scope only: their own and
# their teams') or the system (a command).
_OWN_ENDPOINT = HUMAN_ENDPOINTS_SQL
PAUSE_QUEUE_BY_HUMAN = statement("pause_queue", owner=_OWN_ENDPOINT)
PAUSE_QUEUE_BY_SYSTEM = statement("pause_queue", owner="TRUE")
RESUME_QUEUE_BY_HUMAN = statement("resume_queue", owner=_OWN_ENDPOINT)
RESUME_QUEUE_BY_SYSTEM = statement("resume_queue", owner="TRUE")
# A spent daily budget's pause, and the sweeper's lifts: of pauses whose time is up, and of
# budget pauses whose budget is no longer spent.
PAUSE_BUDGET = statement("pause_budget")
LIFT_PAUSES = statement("lift_pauses")
LIFT_UNSPENT_PAUSES = statement("lift_unspent_pauses")
# A queue's limits (docs/decisions/0028-queue-limits.md), by the same two.
SET_QUEUE_LIMITS_BY_HUMAN = statement("set_queue_limits", owner=_OWN_ENDPOINT)
SET_QUEUE_LIMITS_BY_SYSTEM = statement("set_queue_limits", owner="TRUE")
# The A2A states: the holder asks for input (interrupt) or refuses (reject); an answer resumes
# the claim, given by the owning human (the Board) or the endpoint's requester (a2a_server).
INTERRUPT = _recorded("interrupt", **_HELD)
_RESUMED = {"attempt": "upd.attempts_total", "from_state": "upd.from_state"}
RESUME_BY_HUMAN = _recorded("resume", scope=HUMAN_SCOPE_SQL, **_RESUMED)
RESUME_BY_REQUESTER = _recorded("resume", scope=ENDPOINT_SCOPE_SQL, **_RESUMED)
REJECT = _recorded("reject", **_HELD)
# The holder's complete and fail classify a miss with REPORTED instead: it may be a retry.
# It answers a replay as the report answered (_view).
REPORTED = statement("reported", scope=ENDPOINT_SCOPE_SQL, returned=AGENT_VIEW_SQL)
# The holder's miss when someone else ended its claim (canceled, timed out): core.holder_miss.
ENDED = statement("ended", scope=ENDPOINT_SCOPE_SQL)
# A miss's classification (core.miss), in the caller's scope.
IN_ENDPOINT_SCOPE = statement("in_scope", scope=ENDPOINT_SCOPE_SQL)
IN_HUMAN_SCOPE = statement("in_scope", scope=HUMAN_SCOPE_SQL)

# --- bulk actions: one statement per filter combination, built on first use -------------------

# The attempt a bulk cancel closed: the todo's open one when it was in flight (the target
# requires that attempt to be visible, so the statement's `closed` arm closed it), else none.
_BULK_CANCELED_ATTEMPT = (
    "CASE WHEN upd.from_state IN ("
    + ", ".join(f"'{state}'" for state in IN_FLIGHT_STATES)
    + ") THEN upd.attempts_total END"
)


@cache
def bulk_statement(action: str, selection: str) -> str:
    """The statement of one bulk action (``retry``, ``cancel``, ``forget``) for one filter
    combination (``TodoFilters.where``'s text), in the human's scope, built once per
    combination."""
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
    if action == "forget":
        return _recorded(
            "bulk_forget",
            attempt="NULL::int",
            from_state="upd.from_state",
            scope=HUMAN_SCOPE_SQL,
            selection=selection,
        )
    raise InvalidInput("action", "must be retry, cancel or forget")


def named() -> dict[str, str]:
    """Every statement of this module by its lower-case name, as it runs: the constants, each
    ``ring_due`` scan as ``ring_due_<scan>``, and each bulk action unfiltered (``bulk_retry``,
    ``bulk_cancel``: a filter adds its predicate in place of ``TRUE``)."""
    found = {
        name.lower(): value
        for name, value in globals().items()
        # ``*_SQL`` are the scope fragments this module imports, not statements.
        if name.isupper()
        and not name.startswith("_")
        and not name.endswith("_SQL")
        and isinstance(value, str)
    }
    found |= {f"ring_due_{scan}": text for scan, text in RING_DUE.items()}
    found |= {f"bulk_{action}": bulk_statement(action, "TRUE") for action in BULK_ACTIONS}
    return dict(sorted(found.items()))
