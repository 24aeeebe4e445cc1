"""What the todo commands share: who acts (``--as``), the one cancel and retry, and the exit codes.

``manage.py todos …`` and ``manage.py cancel`` both act through here, so a cancel from either
is the same call with the same answers (docs/guides/operations.md, "The todo commands").

Who acts: with ``--as USERNAME`` the command is that operator's, in their scope
(``switchboard/scope.py``), exactly as the Board is theirs; a todo outside it answers "not found",
as an unknown id does. Without ``--as`` a command on one todo is the system's (``manage.py``), in
the scope of the todo's owner: whoever runs manage.py on the server already has the database.

Exit codes (``EXIT``): 0 done; 1 refused input (a bad filter, an unknown operator, a reason too
long); 2 usage (argparse's own); 3 not found (unknown, or outside the operator's scope); 4 the
todo's state allows no such action (already finished, nothing to retry).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.management.base import CommandError

from switchboard.lib.errors import InvalidInput, LeaseConflict, TodoNotFound
from switchboard.models import Human
from switchboard.scope import Scope, acting_human
from todos import lifecycle
from todos.models import Todo

EXIT_REFUSED = 1
EXIT_NOT_FOUND = 3
EXIT_CONFLICT = 4


def not_found(todo_id: str) -> CommandError:
    """The one answer for an unknown todo and another operator's: they read the same."""
    return CommandError(f"{todo_id}: not found", returncode=EXIT_NOT_FOUND)


def operator_scope(username: str) -> Scope:
    """The scope of the operator named ``username`` (``--as``); exit 1 when there is none."""
    human_id = Human.objects.filter(username=username).values_list("id", flat=True).first()
    if human_id is None:
        raise CommandError(f"no operator named {username!r}", returncode=EXIT_REFUSED)
    return Scope.of_human(human_id)


@dataclass(frozen=True, slots=True)
class Acting:
    """Who acts on one todo: a human's scope, and whether it is the system acting in it."""

    scope: Scope
    by_system: bool

    @property
    def human_id(self) -> int:
        assert self.scope.human_id is not None
        return self.scope.human_id


def acting(todo_id: str, as_user: str | None) -> Acting:
    """``--as`` as an operator's scope, or the system in the scope of the todo's owner."""
    if as_user is not None:
        return Acting(operator_scope(as_user), by_system=False)
    owner = (
        Todo.objects.filter(pk=todo_id)
        .values_list("endpoint__owner_id", "endpoint__team_id")
        .first()
    )
    # A team's endpoint: the system acts in one of the team's admins' scope (scope.acting_human).
    human_id = acting_human(*owner) if owner is not None else None
    if human_id is None:
        raise not_found(todo_id)
    return Acting(Scope.of_human(human_id), by_system=True)


def cancel(todo_id: str, reason: str, as_user: str | None) -> str:
    """Cancel a todo as the Board does; the line to print. Its holder, if any, learns it at its
    next heartbeat or report (the error code ``canceled``, with the reason and who)."""
    who = acting(todo_id, as_user)
    try:
        done = lifecycle.cancel(who.scope, todo_id, reason=reason, by_system=who.by_system)
    except TodoNotFound:
        raise not_found(todo_id) from None
    except LeaseConflict:
        raise CommandError(
            f"{todo_id}: already finished, nothing to cancel", returncode=EXIT_CONFLICT
        ) from None
    except InvalidInput as exc:
        raise CommandError(f"refused: {exc}", returncode=EXIT_REFUSED) from None
    held = " (its holder is told at its next call)" if done.attempt_seq is not None else ""
    return f"Canceled {todo_id}{held}."


def retry(todo_id: str, as_user: str | None) -> str:
    """Send a failed, canceled or rejected todo back to pending, as the Board's retry does."""
    who = acting(todo_id, as_user)
    try:
        lifecycle.retry(who.human_id, todo_id, by_system=who.by_system)
    except TodoNotFound:
        raise not_found(todo_id) from None
    except LeaseConflict:
        raise CommandError(
            f"{todo_id}: not failed, canceled or rejected, nothing to retry",
            returncode=EXIT_CONFLICT,
        ) from None
    return f"Retried {todo_id}: pending again, with a fresh attempt budget."
