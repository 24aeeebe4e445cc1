"""The todos' limits and names, once: what the lifecycle accepts, what MCP's schemas advertise,
what a rule is checked against, and how a todo id and a queue name look.

A pure module (no database, no app above ``switchboard.lib``), so the models, the reads, the
lifecycle and the surfaces all import it without importing one another. A limit the SQL also
needs is spliced into the statement at load time from here (``PRIOR_ATTEMPTS`` into
``todos/sql/_claim_tail.sql``), never written twice.
"""

from __future__ import annotations

import secrets
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
BULK_ACTIONS = ("retry", "cancel")
# The closed attempts a claim result carries, newest first: the statement's own LIMIT
# (spliced into todos/sql/_claim_tail.sql at load) and the re-read after a stale snapshot.
PRIOR_ATTEMPTS = 5

_TODO_ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"


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
