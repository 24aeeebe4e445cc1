"""The todos' limits and names, once: what the lifecycle accepts, what MCP's schemas advertise,
what a rule is checked against, and how a todo id and a queue name look.

A pure module (no database, no app above ``switchboard.lib``), so the models, the reads, the
lifecycle and the surfaces all import it without importing one another. A limit the SQL also
needs is spliced into the statement at load time from here (``PRIOR_ATTEMPTS`` into
``todos/sql/_claim_tail.sql``), never written twice.
"""

from __future__ import annotations

import datetime as dt
import re
import secrets
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from switchboard.lib import jsonlimits
from switchboard.lib.errors import InvalidInput
from switchboard.lib.text import strip_control

# A lease, in seconds: what a claim, a heartbeat or an answer may ask for.
LEASE_TTL_MIN_SECONDS = 10
LEASE_TTL_MAX_SECONDS = 24 * 3600
# The longest back-off a fail may ask for (``retry_after_seconds``).
RETRY_AFTER_MAX_SECONDS = 7 * 24 * 3600
# A todo's ``max_attempts`` (a rule's too).
MAX_ATTEMPTS_LIMIT = 1000
QUEUE_MAX_BYTES = 128
OWNER_MAX_BYTES = 256  # a lease holder's name; an assignee's too
TITLE_MAX_BYTES = 1024
ACTIVITY_TEXT_MAX_BYTES = 512  # todo_activity.message
ACTOR_REF_MAX_BYTES = 128  # todo_activity.actor_ref
TRACE_ID_BYTES = 16  # todo_attempts.trace_id: a W3C trace id
# The rows one sweep statement takes at a time (reap, requeue, ring_due): a batch commits and
# releases its locks before the next (todos/sweeps.py).
SWEEP_BATCH = 500
# The most todos one bulk action changes: one statement holds their row locks until it commits,
# so a click must not lock the table for long (docs/decisions/0020-queue-pause-and-bulk-actions.md).
BULK_MAX = 10_000
BULK_ACTIONS = ("retry", "cancel", "forget")
# The closed attempts a claim result carries, newest first: the statement's own LIMIT
# (spliced into todos/sql/_claim_tail.sql at load) and the re-read after a stale snapshot.
PRIOR_ATTEMPTS = 5

# Time on a todo (docs/decisions/0027-time-and-cancellation.md): the schema's CHECKs
# (todos/migrations/0015) hold the same bounds.
PRIORITY_MIN = -1000
PRIORITY_MAX = 1000
RUN_TIMEOUT_MIN_SECONDS = 10
RUN_TIMEOUT_MAX_SECONDS = 7 * 24 * 3600
DEDUPE_KEY_MAX_BYTES = 256
WORK_ORDER_MAX_CHARS = 65536  # what lifecycle.create stores as a todo's work order
# The instants a todo's time may name. PostgreSQL stores far wider ones than Python's datetime
# reads back (years 1 to 9999, in UTC as the connection reads them): an instant outside these
# would be stored and then fail every read of its row (the Board, the agent's claim).
INSTANT_MIN = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
INSTANT_MAX = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)
# The time fields create() takes, in the order the checks name them.
TIME_FIELDS = ("priority", "not_before", "start_by", "finish_by", "run_timeout_seconds")

_TODO_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
_RELATIVE = re.compile(r"^\+([0-9]{1,9})([smhd])$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def new_todo_id() -> str:
    """``td_`` + 20 lowercase base32 characters (100 random bits)."""
    return "td_" + "".join(secrets.choice(_TODO_ID_ALPHABET) for _ in range(20))


def check_name(field: str, value: Any, max_bytes: int = QUEUE_MAX_BYTES) -> str:
    """A short identifier (queue, owner): a non-empty string without control characters.

    Returns ``value``; raises ``InvalidInput`` naming ``field`` otherwise.
    """
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


def check_queue(value: Any, field: str = "queue") -> str:
    """A queue's name: ``check_name``'s rules, and no ``*``, which the Board's list filter reads
    as a wildcard (``queue=ci-*``, todos/filters.py), so a queue so named could never be listed
    alone."""
    name = check_name(field, value)
    if "*" in name:
        raise InvalidInput(field, "must not contain * (the list's wildcard)")
    return name


@dataclass(frozen=True, slots=True)
class TodoTime:
    """A todo's time, checked: what ``lifecycle.create`` writes (todos/migrations/0015)."""

    priority: int = 0
    not_before: dt.datetime | None = None
    start_by: dt.datetime | None = None
    finish_by: dt.datetime | None = None
    run_timeout_seconds: int | None = None
    dedupe_key: str | None = None


def _integer(field: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, "must be an integer")
    if not low <= value <= high:
        raise InvalidInput(field, f"must be between {low} and {high}")
    return value


def _instant(field: str, value: Any) -> dt.datetime | None:
    if value is None:
        return None
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        raise InvalidInput(field, "must be an instant with a time zone")
    if not INSTANT_MIN <= value < INSTANT_MAX:
        raise InvalidInput(field, f"must be from {_iso(INSTANT_MIN)} to before {_iso(INSTANT_MAX)}")
    return value


def _iso(instant: dt.datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def check_time(
    *,
    priority: Any = 0,
    not_before: Any = None,
    start_by: Any = None,
    finish_by: Any = None,
    run_timeout_seconds: Any = None,
    dedupe_key: Any = None,
    now: dt.datetime,
) -> TodoTime:
    """Check a new todo's time against ``now``; raise ``InvalidInput`` naming the field.

    A priority in -1000..1000; start_by and finish_by still ahead; not_before <= start_by <=
    finish_by (a todo that could not be claimed before it must have started, or finished, is
    refused, not dead-lettered on arrival); a run timeout of at least 10 seconds; a dedupe key
    of 1 to 256 bytes without controls. A not_before already past is allowed: claimable now.
    """
    time = TodoTime(
        priority=_integer("priority", priority, PRIORITY_MIN, PRIORITY_MAX),
        not_before=_instant("not_before", not_before),
        start_by=_instant("start_by", start_by),
        finish_by=_instant("finish_by", finish_by),
        run_timeout_seconds=None
        if run_timeout_seconds is None
        else _integer(
            "run_timeout_seconds",
            run_timeout_seconds,
            RUN_TIMEOUT_MIN_SECONDS,
            RUN_TIMEOUT_MAX_SECONDS,
        ),
        dedupe_key=None
        if dedupe_key is None
        else check_name("dedupe_key", dedupe_key, DEDUPE_KEY_MAX_BYTES),
    )
    for field in ("start_by", "finish_by"):
        value = getattr(time, field)
        if value is not None and value <= now:
            raise InvalidInput(field, "is already past")
    if time.start_by and time.finish_by and time.start_by > time.finish_by:
        raise InvalidInput("start_by", "must not be after finish_by")
    if time.not_before:
        for field in ("start_by", "finish_by"):
            value = getattr(time, field)
            if value is not None and time.not_before > value:
                raise InvalidInput("not_before", f"must not be after {field}")
    return time


def parse_instant(field: str, text: Any, now: dt.datetime) -> dt.datetime | None:
    """An instant as typed (a command's option, a message's metadata): ISO 8601 with a time
    zone (``2026-01-02T03:04:05Z``), or relative to ``now`` (``+90s``, ``+10m``, ``+2h``,
    ``+1d``). None and "" are None; anything else raises ``InvalidInput`` naming ``field``."""
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise InvalidInput(field, "must be an ISO 8601 instant or +N[s|m|h|d]")
    if match := _RELATIVE.match(text.strip()):
        ahead = dt.timedelta(seconds=int(match.group(1)) * _UNIT_SECONDS[match.group(2)])
        if ahead >= INSTANT_MAX - now:
            raise InvalidInput(field, f"must be before {_iso(INSTANT_MAX)}")
        return now + ahead
    try:
        value = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidInput(field, "must be an ISO 8601 instant or +N[s|m|h|d]") from None
    if value.tzinfo is None:
        raise InvalidInput(field, "must carry a time zone (Z or +hh:mm)")
    return value


# A cost cap or budget in USD: non-negative, at most this, at most 6 decimals (the columns').
COST_MAX_USD = Decimal(1_000_000)
# The scale the cost columns hold caps and budgets at (numeric(14, 6)): a micro-dollar.
MICRO_USD = Decimal("0.000001")


def usd_text(amount: Decimal) -> str:
    """``amount`` as a JSON detail carries it: exact, at the columns' scale of 6 decimals
    (``0.400000``, not the sum's ``0.400000000000``), finer only when it is (``0.00000005``,
    a sub-micro spend that must not read as none)."""
    micros = amount.quantize(MICRO_USD)
    return str(micros) if micros == amount else f"{amount.normalize():f}"


def reached(spent: Decimal, limit: Decimal, share: Decimal = Decimal(1)) -> bool:
    """``spent`` reached ``share`` of ``limit`` (a todo's cost cap, a daily budget) and is
    above $0: what todos/sql/over_cap.sql and otlp/sql/rollup.sql write as ``cost_usd >=
    max_cost_usd AND cost_usd > 0``. A limit of $0 allows no priced spend: any positive spend
    reaches it, none never does."""
    return spent > 0 and spent >= limit * share


def check_cost(field: str, value: object) -> Decimal | None:
    """``value`` (a Decimal, a number or its text) as a USD amount for ``field``, None for
    none; ``InvalidInput`` naming ``field`` when it is negative, not a finite number, above
    ``COST_MAX_USD`` or finer than a millionth."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (Decimal, int, float, str)):
        raise InvalidInput(field, "must be a number of US dollars")
    text = str(value).strip()
    # Decimal also reads digits of other scripts (U+0661) and underscores ("5_0" is 50): text
    # from outside is held to what a person types as an amount.
    if isinstance(value, str) and (not text.isascii() or "_" in text):
        raise InvalidInput(field, "must be a number of US dollars")
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise InvalidInput(field, "must be a number of US dollars") from None
    if not amount.is_finite() or amount < 0:
        raise InvalidInput(field, "must be a non-negative number of US dollars")
    if amount > COST_MAX_USD:
        raise InvalidInput(field, f"must be at most {COST_MAX_USD}")
    micros = amount.quantize(MICRO_USD)
    if amount != micros:
        raise InvalidInput(field, "must have at most 6 decimals")
    # The amount as the columns hold it (numeric(14, 6)): a zero written with a vast exponent
    # (``0e999999999999``) is a number PostgreSQL refuses to read, a 500 where it was stored.
    return micros
