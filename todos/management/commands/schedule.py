"""Cron schedules from the shell, through ``todos.schedules`` as the Board's buttons are.

``manage.py schedule add --endpoint E --queue Q --cron EXPR --title T [--timezone TZ]
[--payload JSON] [--missed skip|run_once] [--as USER]`` prints the id and the next five runs;
``schedule list [--endpoint E] [--json]``; ``schedule pause|resume|run-now|remove ID``.

With ``--as USERNAME`` the command acts in that operator's scope (the schedules of the endpoints
they see, their own and their teams', as on the Board: another's read as unknown); without it,
as the system, over every schedule: whoever runs manage.py on the server already has the
database. Bad input exits 1 with one line naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard.lib import jsonlimits
from switchboard.lib.errors import InvalidInput
from switchboard.lib.text import integer_argument
from switchboard.models import Endpoint, Human
from switchboard.scope import owned_by
from todos import schedules
from todos.models import MissedPolicy, Schedule


class Command(BaseCommand):
    help = "Add, list, pause, resume, run now or remove cron schedules that create todos."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        add = actions.add_parser("add", help="Add a schedule; print its id and next five runs.")
        add.add_argument("--endpoint", required=True, help="The endpoint's slug.")
        add.add_argument("--queue", required=True, help="The queue its todos go to.")
        add.add_argument("--cron", required=True, help="A cron expression: '*/15 * * * *'.")
        add.add_argument(
            "--title", required=True, help="The todos' title: {tick}, {date}, {time}, {schedule}."
        )
        add.add_argument("--timezone", default="UTC", help="The cron's time zone (default UTC).")
        add.add_argument("--payload", default=None, help="The todos' payload: a JSON object.")
        add.add_argument("--work-order", default="", help="The todos' work order (a template).")
        add.add_argument(
            "--missed",
            default=MissedPolicy.SKIP,
            help="Ticks missed while no sweeper ran: skip (default) or run_once.",
        )
        add.add_argument("--max-attempts", type=integer_argument, default=5)
        self._as(add)
        listing = actions.add_parser("list", help="List schedules.")
        listing.add_argument("--endpoint", help="Only this endpoint's (its slug).")
        listing.add_argument("--json", action="store_true", help="One JSON array.")
        self._as(listing)
        for action in ("pause", "resume", "run-now", "remove"):
            one = actions.add_parser(action)
            one.add_argument("id", help="The schedule's id.")
            self._as(one)

    @staticmethod
    def _as(parser: CommandParser) -> None:
        parser.add_argument(
            "--as",
            dest="as_user",
            metavar="USERNAME",
            help="Act in this operator's scope; default: the system's (every schedule).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        human = None
        if options.get("as_user") is not None:
            human = Human.objects.filter(username=options["as_user"]).first()
            if human is None:
                raise CommandError(f"no operator named {options['as_user']!r}")
        try:
            getattr(self, "do_" + options["action"].replace("-", "_"))(human, options)
        except InvalidInput as exc:
            raise CommandError(f"refused: {exc}") from None

    def _endpoint(self, human: Human | None, slug: str) -> Endpoint:
        found = Endpoint.objects.filter(slug=slug)
        if human is not None:
            found = found.filter(owned_by(human.pk))
        endpoint = found.first()
        if endpoint is None:
            raise InvalidInput("endpoint", f"no endpoint with slug {slug!r}")
        return endpoint

    def do_add(self, human: Human | None, options: dict[str, Any]) -> None:
        payload = None
        if options["payload"] is not None:
            try:
                payload = jsonlimits.loads(options["payload"])
            except ValueError as exc:
                raise InvalidInput("payload", f"is not JSON ({exc})") from None
        schedule = schedules.add(
            self._endpoint(human, options["endpoint"]),
            queue=options["queue"],
            cron=options["cron"],
            title=options["title"],
            timezone=options["timezone"],
            payload=payload,
            work_order=options["work_order"],
            missed=options["missed"],
            max_attempts=options["max_attempts"],
            by=human,
        )
        self.stdout.write(f"Added schedule {schedule.pk}. Next runs ({schedule.timezone}):")
        for tick in schedules.upcoming(schedule):
            self.stdout.write(f"  {schedules.local_iso(tick, schedule.timezone)}")

    def do_list(self, human: Human | None, options: dict[str, Any]) -> None:
        found = (
            schedules.visible(human) if human is not None else Schedule.objects.all()
        ).select_related("endpoint")
        if options["endpoint"]:
            found = found.filter(endpoint__slug=options["endpoint"])
        rows = [
            {
                "id": s.pk,
                "endpoint": s.endpoint.slug,
                "queue": s.queue,
                "cron": s.cron,
                "timezone": s.timezone,
                "title": s.title_template,
                "enabled": s.enabled,
                "missed": s.missed,
                "next_run_at": s.next_run_at.isoformat() if s.next_run_at else None,
                "last_run_at": s.last_run_at.isoformat() if s.last_run_at else None,
            }
            for s in found.order_by("id")
        ]
        if options["json"]:
            self.stdout.write(json.dumps(rows, indent=2))
            return
        for row in rows:
            state = f"next {row['next_run_at']}" if row["enabled"] else "paused"
            self.stdout.write(
                f"{row['id']}  {row['endpoint']}/{row['queue']}  {row['cron']!r}"
                f" {row['timezone']}  {state}  {row['title']}"
            )

    def _one(self, human: Human | None, options: dict[str, Any]) -> Schedule:
        return schedules.get_visible(human, options["id"])

    def do_pause(self, human: Human | None, options: dict[str, Any]) -> None:
        schedule = self._one(human, options)
        done = schedules.pause(schedule)
        self.stdout.write(
            f"Paused schedule {schedule.pk}." if done else f"Schedule {schedule.pk} was paused."
        )

    def do_resume(self, human: Human | None, options: dict[str, Any]) -> None:
        schedule = self._one(human, options)
        if schedules.resume(schedule):
            when = schedules.local_iso(schedule.next_run_at, schedule.timezone)
            self.stdout.write(f"Resumed schedule {schedule.pk}; next run {when}.")
        else:
            self.stdout.write(f"Schedule {schedule.pk} was not paused.")

    def do_run_now(self, human: Human | None, options: dict[str, Any]) -> None:
        run = schedules.run_now(self._one(human, options))
        self.stdout.write(f"Created {run.todo_id}.")

    def do_remove(self, human: Human | None, options: dict[str, Any]) -> None:
        schedule = self._one(human, options)
        schedules.remove(schedule)
        self.stdout.write(f"Removed schedule {schedule.pk}; the todos it created stay.")
