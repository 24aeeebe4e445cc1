"""List, show, retry and cancel todos from the shell, as the Board does, for scripts and operators.

``manage.py todos list [--endpoint E] [--queue Q] [--state S] [--dead] [--search TEXT]
[--sort S] [--limit N] [--after CURSOR] [--json]``: the Board's list, built from the same filter
object (``TodoFilters``, ``todos/filters.py``) and read by the same query, so ``--json`` lists
what the Board lists for the same filters; ``--after`` continues from a page's ``next_cursor``.
``manage.py todos show ID [--json]``: one todo and its newest attempts.
``manage.py todos retry ID``; ``manage.py todos cancel ID --reason R`` (``manage.py cancel`` is
the same call).

Each takes ``--as USERNAME``: that operator's view and action, in their scope. Without it, a
command on one todo is the system's in the scope of the todo's owner, and ``list`` needs
``--endpoint`` (the endpoint's own todos). A foreign or unknown id is the same "not found".
Exit codes: ``todos/management/operate.py`` (0 done, 1 refused input, 2 usage, 3 not found,
4 the state allows no such action).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from attempts.types import Usage
from switchboard.lib import text
from switchboard.lib.errors import TodoNotFound
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import queries
from todos.filters import SORTS, TodoFilters
from todos.management import operate
from todos.models import Todo
from todos.states import State

LIST_LIMIT_MAX = 500
SHOW_ATTEMPTS = 20


def _as_option(parser: CommandParser) -> None:
    parser.add_argument(
        "--as",
        dest="as_user",
        metavar="USERNAME",
        help="Act as this operator, in their scope (as on the Board); default: the system.",
    )


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= LIST_LIMIT_MAX:
        raise CommandError(
            f"--limit: a whole number from 1 to {LIST_LIMIT_MAX}", returncode=operate.EXIT_REFUSED
        )
    return value


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


# A todo's fields as the command prints them (the list's columns; ``show`` adds the large ones).
_FIELDS = (
    "queue",
    "title",
    "state",
    "assignee",
    "owner",
    "claimant",
    "attempt",
    "max_attempts",
    "attempts_total",
    "priority",
    "run_timeout_seconds",
    "dedupe_key",
)
_TIMES = (
    "lease_expires_at",
    "claimed_at",
    "next_retry_at",
    "created_at",
    "updated_at",
    "finished_at",
    "not_before",
    "start_by",
    "finish_by",
)


def _row(todo: Todo, *, detail: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"id": todo.id, "endpoint": todo.endpoint.slug}
    out |= {name: getattr(todo, name) for name in _FIELDS}
    out |= {name: _iso(getattr(todo, name)) for name in _TIMES}
    out["dead_letter"] = todo.dead_letter
    if detail:
        out |= {
            "payload": todo.payload,
            "work_order": todo.work_order,
            "input_request": todo.input_request,
            "result": todo.result,
            # As get_todo gives it (mcp_server/shapes.py): tokens, cost, unpriced tokens.
            "usage": Usage.from_row(todo).as_json(),
            "max_cost_usd": None if todo.max_cost_usd is None else str(todo.max_cost_usd),
        }
    return out


def _holder(attempt: Any) -> str:
    """Who made the claim, as the trail names it: its claimant label, else the lease's owner."""
    return attempt.claimant or attempt.owner or "-"


def _attempt(attempt: Any) -> dict[str, Any]:
    return {
        "seq": attempt.seq,
        "claimant": attempt.claimant,
        "owner": attempt.owner,
        "claimed_at": _iso(attempt.claimed_at),
        "ended_at": _iso(attempt.ended_at),
        "outcome": attempt.outcome,
        "disposition": attempt.disposition,
        "summary": attempt.summary,
        "usage": attempt.usage.as_json(),
    }


class Command(BaseCommand):
    help = "List, show, retry or cancel todos, as the Board does (list, show, retry, cancel)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
        listing = actions.add_parser("list", help="The todos the Board lists for these filters.")
        listing.add_argument("--endpoint", default="", help="The endpoint's slug.")
        listing.add_argument("--queue", default="", help="A queue, or a prefix and * (ci-*).")
        listing.add_argument("--state", default="", choices=State.values)
        listing.add_argument("--dead", action="store_true", help="Dead letters only.")
        listing.add_argument("--search", default="", help="A todo id, or title/payload text.")
        listing.add_argument("--sort", default="", choices=SORTS, help="Default: -created.")
        listing.add_argument("--limit", type=str, default="50", help="Rows, 1 to 500.")
        listing.add_argument("--after", default="", help="A next_cursor from a previous page.")
        listing.add_argument("--json", action="store_true", help="One JSON object on stdout.")
        _as_option(listing)
        show = actions.add_parser("show", help="One todo and its newest attempts.")
        show.add_argument("todo_id", help="The todo's id (td_…).")
        show.add_argument("--json", action="store_true", help="One JSON object on stdout.")
        _as_option(show)
        retry = actions.add_parser("retry", help="A failed, canceled or rejected todo, again.")
        retry.add_argument("todo_id", help="The todo's id (td_…).")
        _as_option(retry)
        cancel = actions.add_parser("cancel", help="Cancel an unfinished todo.")
        cancel.add_argument("todo_id", help="The todo's id (td_…).")
        cancel.add_argument("--reason", required=True, help="Why: the holder is told this.")
        _as_option(cancel)

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "list":
            self._list(options)
        elif action == "show":
            self._show(options["todo_id"], options["as_user"], as_json=options["json"])
        elif action == "retry":
            self.stdout.write(operate.retry(options["todo_id"], options["as_user"]))
        else:
            self.stdout.write(
                operate.cancel(options["todo_id"], options["reason"], options["as_user"])
            )

    # --- list ------------------------------------------------------------------------------

    def _list_scope(self, as_user: str | None, slug: str) -> Scope:
        if as_user is not None:
            return operate.operator_scope(as_user)
        if not slug:
            raise CommandError(
                "todos list: name --as USERNAME (an operator's list, as on the Board)"
                " or --endpoint SLUG (that endpoint's todos)",
                returncode=operate.EXIT_REFUSED,
            )
        endpoint_id = Endpoint.objects.filter(slug=slug).values_list("id", flat=True).first()
        if endpoint_id is None:
            raise CommandError(f"no endpoint with slug {slug!r}", returncode=operate.EXIT_REFUSED)
        return Scope.of_endpoint(endpoint_id)

    def _list(self, options: dict[str, Any]) -> None:
        params = {
            "endpoint": options["endpoint"],
            "queue": options["queue"],
            "state": options["state"],
            "dead": "1" if options["dead"] else "",
            "q": options["search"],
            "sort": options["sort"],
        }
        filters = TodoFilters.parse(params)
        if filters.errors:
            raise CommandError("; ".join(filters.errors), returncode=operate.EXIT_REFUSED)
        size = _limit(options["limit"])
        after = None
        if options["after"]:
            after = queries.Cursor.decode(options["after"])
            if after is None or after.sort != filters.order:
                raise CommandError(
                    "--after: not a next_cursor of this sort", returncode=operate.EXIT_REFUSED
                )
        scope = self._list_scope(options["as_user"], filters.endpoint)
        page = queries.todo_page(scope, filters, after, size=size)
        cursor = page.next_cursor.encode() if page.next_cursor else None
        if options["json"]:
            out = {"todos": [_row(t) for t in page.todos], "next_cursor": cursor}
            self.stdout.write(json.dumps(out, ensure_ascii=False))
            return
        for todo in page.todos:
            where = f"{todo.endpoint.slug}/{todo.queue}"
            state = "dead letter" if todo.dead_letter else todo.state
            self.stdout.write(f"{todo.id}  {state:<15} {where:<30} {todo.title}")
        if cursor:
            self.stderr.write(f"more: --after {cursor}")
        elif not page.todos:
            self.stderr.write("No todos match.")

    # --- show ------------------------------------------------------------------------------

    def _show(self, todo_id: str, as_user: str | None, *, as_json: bool) -> None:
        who = operate.acting(todo_id, as_user)
        try:
            detail = queries.todo_detail(who.scope, todo_id, SHOW_ATTEMPTS)
        except TodoNotFound:
            raise operate.not_found(todo_id) from None
        todo = _row(detail.todo, detail=True)
        if as_json:
            out = {
                "todo": todo,
                "attempts": [_attempt(a) for a in detail.history.attempts],
                "attempts_total": detail.history.total,
            }
            self.stdout.write(json.dumps(out, ensure_ascii=False))
            return
        lines = [f"{todo_id}  {detail.todo.title}", f"  endpoint: {detail.todo.endpoint.slug}"]
        for key in (
            "queue",
            "state",
            "dead_letter",
            "priority",
            "attempt",
            "max_attempts",
            "owner",
            "lease_expires_at",
            "next_retry_at",
            "created_at",
            "updated_at",
            "finished_at",
        ):
            if todo[key] not in (None, False):
                lines.append(f"  {key}: {todo[key]}")
        usage = Usage.from_row(detail.todo)
        if usage.any or detail.todo.max_cost_usd is not None:
            cap = detail.todo.max_cost_usd
            capped = f" (cap {text.money(cap)})" if cap is not None else ""
            lines.append(f"  cost: {usage.label()}{capped}")
        lines.append(f"  attempts: {detail.history.total}")
        for attempt in detail.history.attempts:
            outcome = attempt.outcome or "open"
            summary = f": {attempt.summary}" if attempt.summary else ""
            cost = f" [{attempt.usage.cost_label()}]" if attempt.usage.any else ""
            lines.append(f"    #{attempt.seq} {outcome} by {_holder(attempt)}{cost}{summary}")
        self.stdout.write("\n".join(lines))
