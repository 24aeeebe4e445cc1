"""The domain's typed errors. Each surface maps them in one place (MCP, Board, OTLP).

``TodoNotFound`` and ``LeaseConflict`` are the two answers to a transition that matched no row,
classified after the fact: no row in the caller's scope is "not found" (an unknown id and a
foreign one are indistinguishable); a row in scope that did not match (wrong state, not the
holder, fence mismatch, budget spent) is a "conflict". Neither says more than that.
"""

from __future__ import annotations


class LifecycleError(Exception):
    """Base of the lifecycle's domain errors; ``code`` is the wire code surfaces use."""

    code = "internal"


class TodoNotFound(LifecycleError):
    code = "not_found"

    def __init__(self, todo_id: str) -> None:
        super().__init__(f"todo {todo_id} not found")
        self.todo_id = todo_id


class LeaseConflict(LifecycleError):
    code = "conflict"

    def __init__(self, todo_id: str, transition: str, because: str | None = None) -> None:
        super().__init__(
            f"todo {todo_id} cannot {transition} now: "
            + (
                because
                or "it is not in a state that allows it, or the caller does not hold its lease"
            )
        )
        self.todo_id = todo_id
        self.transition = transition


class TodoEnded(LifecycleError):
    """The caller's claim was ended by someone else: canceled (the Board, a bulk cancel, A2A,
    ``manage.py cancel``), timed out (a deadline or the run timeout, by the sweeper) or
    ``budget_exceeded`` (the todo's cost reached its max_cost_usd). Raised
    only to the holder (its endpoint, owner and fence); anyone else gets ``LeaseConflict``.
    ``code`` is the attempt's outcome, ``reason`` why (the cancel's reason, or ``finish_by``,
    ``start_by``, ``run_timeout``), ``by`` who ended it as the activity records it (an actor's
    one spelling, switchboard/lib/actors.py) and ``by_name`` as people read it (the operator's
    username, the endpoint's slug: switchboard/actors.py)."""

    def __init__(
        self,
        todo_id: str,
        code: str,
        reason: str | None,
        by: str | None,
        by_name: str | None = None,
    ) -> None:
        word = {"canceled": "canceled", "budget_exceeded": "stopped: budget exceeded"}.get(
            code, "timed out"
        )
        who = f" by {by_name}" if by_name else ""
        super().__init__(f"todo {todo_id} was {word}{who}" + (f": {reason}" if reason else ""))
        self.todo_id = todo_id
        self.code = code
        self.reason = reason
        self.by = by
        self.by_name = by_name


class InvalidInput(LifecycleError):
    """An argument was malformed or out of bounds; nothing was changed."""

    code = "invalid"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class AttemptInvariantViolated(LifecycleError):
    """The deferred one-open-attempt constraint fired at commit: a bug, never the caller's fault."""

    code = "internal"

    def __init__(self, todo_id: str | None) -> None:
        super().__init__(
            f"todo {todo_id or '(unknown)'} would have two open attempts;"
            " the transaction was rolled back"
        )
        self.todo_id = todo_id
