"""Pause, resume or limit an endpoint's queue from the shell, as the Board's queue page does.

``manage.py queue pause --endpoint agent-a --queue triage`` (``resume`` the same);
``manage.py queue set --endpoint agent-a --queue triage [--max-in-flight N]
[--claims-per-minute N] [--run-timeout SECONDS] [--max-cost-usd USD] [--daily-budget-usd USD]``
sets the limits given (``none`` clears one, the
others are kept); ``manage.py queue show [--endpoint agent-a]`` lists the limits set, the cost
cap and daily budget among them (amounts as ``switchboard.lib.text.money`` says them: ``$0.00``
is a cap or budget of $0, which allows no priced spend; ``none``, none set). With
``--as USERNAME`` the change is recorded as that operator's (who must own the endpoint, as on the
Board) and ``show`` lists only their endpoints; without it, as the system's (``manage.py``):
whoever runs manage.py on the server already has the database, so the command is not a door into
another operator's endpoints, and names no operator it cannot vouch for. Prints what it changed;
a bad value exits 1 with one line naming the option.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard import actors
from switchboard.lib.errors import InvalidInput
from switchboard.lib.text import money
from switchboard.models import Endpoint, Human
from switchboard.scope import Scope
from todos import lifecycle, queries

# The limits `set` takes: option name, the lifecycle's keyword.
LIMIT_OPTIONS = {
    "max_in_flight": "--max-in-flight",
    "claims_per_minute": "--claims-per-minute",
    "run_timeout_seconds": "--run-timeout",
}
# The amounts `set` takes (USD, decimals allowed).
COST_OPTIONS = {
    "default_max_cost_usd": "--max-cost-usd",
    "daily_budget_usd": "--daily-budget-usd",
}


def _limit_value(field: str, text: str) -> int | Decimal | None:
    """An option's value read as the Board's limits page and the admin read it
    (``lifecycle.limit_from_text``), ``none`` clearing it."""
    if text.strip().lower() == "none":
        return None
    if not text.strip():
        raise InvalidInput(field, "must be a value, or none to clear it")
    return lifecycle.limit_from_text(field, text)


class Command(BaseCommand):
    help = (
        "Pause, resume or limit an endpoint's queue (set, show): a paused queue gives agents"
        " nothing to claim; a limited one no more than its limits allow."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("pause", "resume", "set", "show"))
        parser.add_argument("--endpoint", help="The endpoint's slug (show: optional).")
        parser.add_argument("--queue", help="The queue's name.")
        parser.add_argument("--max-in-flight", metavar="N|none", dest="max_in_flight")
        parser.add_argument("--claims-per-minute", metavar="N|none", dest="claims_per_minute")
        parser.add_argument(
            "--run-timeout",
            metavar="SECONDS|none",
            dest="run_timeout_seconds",
            help="The default run timeout of the queue's todos that set none.",
        )
        parser.add_argument(
            "--max-cost-usd",
            metavar="USD|none",
            dest="default_max_cost_usd",
            help="The cost cap of the queue's todos created without one.",
        )
        parser.add_argument(
            "--daily-budget-usd",
            metavar="USD|none",
            dest="daily_budget_usd",
            help="What the queue's model calls may cost a UTC day before it pauses itself.",
        )
        parser.add_argument(
            "--as",
            dest="as_user",
            metavar="USERNAME",
            help="Record the change as this operator's (they must own the endpoint);"
            " default: the system's (manage.py).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        action, slug, queue = options["action"], options["endpoint"], options["queue"]
        human_id = None
        if options["as_user"] is not None:
            human = Human.objects.filter(username=options["as_user"]).first()
            if human is None:
                raise CommandError(f"no operator named {options['as_user']!r}")
            human_id = human.id
        if action == "show":
            self._show(slug, human_id)
            return
        if slug is None or queue is None:
            raise CommandError(f"queue {action} needs --endpoint and --queue")
        endpoint = Endpoint.objects.filter(slug=slug).first()
        if endpoint is None:
            raise CommandError(f"no endpoint with slug {slug!r}")
        where = f"queue {queue!r} of {slug}"
        try:
            if action == "set":
                self._set(endpoint, queue, human_id, options, where)
                return
            change = lifecycle.pause_queue if action == "pause" else lifecycle.resume_queue
            done = change(endpoint.id, queue, human_id=human_id)
        except InvalidInput as exc:
            if exc.field == "endpoint":
                raise CommandError(
                    f"{options['as_user']} does not own the endpoint {slug!r}"
                ) from None
            raise CommandError(f"refused: {_as_option(exc)}") from None
        if done.changed:
            self.stdout.write(f"{'Paused' if done.paused else 'Resumed'} {where}.")
        else:
            self.stdout.write(
                f"Nothing changed: {where} is {'already' if done.paused else 'not'} paused."
            )

    def _set(
        self,
        endpoint: Endpoint,
        queue: str,
        human_id: int | None,
        options: dict[str, Any],
        where: str,
    ) -> None:
        given: dict[str, Any] = {
            field: _limit_value(field, options[field])
            for field in [*LIMIT_OPTIONS, *COST_OPTIONS]
            if options[field] is not None
        }
        if not given:
            raise CommandError(
                "queue set needs at least one of "
                + ", ".join([*LIMIT_OPTIONS.values(), *COST_OPTIONS.values()])
            )
        done = lifecycle.set_queue_limits(endpoint.id, queue, human_id=human_id, **given)
        now = _describe(done.max_in_flight, done.claims_per_minute, done.run_timeout_seconds)
        now += _costs(done.default_max_cost_usd, done.daily_budget_usd)
        if done.changed:
            self.stdout.write(f"Set {where}: {now}.")
        else:
            self.stdout.write(f"Nothing changed: {where} already has {now}.")

    def _show(self, slug: str | None, human_id: int | None) -> None:
        scope = Scope.of_human(human_id) if human_id is not None else None
        rows = queries.queue_limits(scope) if scope is not None else queries.all_queue_limits()
        if slug is not None:
            rows = [r for r in rows if r.endpoint.slug == slug]
        if not rows:
            self.stdout.write("No queue has limits.")
            return
        names = actors.resolve(r.updated_by for r in rows)
        for r in rows:
            limits = _describe(r.max_in_flight, r.claims_per_minute, r.run_timeout_seconds)
            limits += _costs(r.default_max_cost_usd, r.daily_budget_usd)
            who = names.label(r.updated_by)
            self.stdout.write(f"{r.endpoint.slug} {r.queue}: {limits} (by {who})")


def _as_option(exc: InvalidInput) -> str:
    """The refusal naming the option the field came from (``--max-in-flight: …``)."""
    text = str(exc)
    option = LIMIT_OPTIONS.get(exc.field) or COST_OPTIONS.get(exc.field)
    return text.replace(f"{exc.field}:", f"{option}:", 1) if option else text


def _describe(max_in_flight: int | None, per_minute: int | None, timeout: int | None) -> str:
    def said(value: int | None, unit: str = "") -> str:
        return "none" if value is None else f"{value}{unit}"

    return (
        f"max_in_flight {said(max_in_flight)}, claims_per_minute {said(per_minute)},"
        f" run_timeout {said(timeout, ' s')}"
    )


def _costs(max_cost_usd: Decimal | None, daily_budget_usd: Decimal | None) -> str:
    """The amounts as ``text.money`` says them: a $0 cap or budget is ``$0.00`` (it allows no
    priced spend), an unset one ``none``."""

    def said(value: Decimal | None) -> str:
        return "none" if value is None else money(value)

    return f", max_cost_usd {said(max_cost_usd)}, daily_budget_usd {said(daily_budget_usd)}"
