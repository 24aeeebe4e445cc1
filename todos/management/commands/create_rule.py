"""Add a routing rule to a webhook source; print the new rule's id on stdout.

The match is the JSON language of ``todos.intake.routing`` (docs/guides/webhooks.md), the same
one the admin and the Board edit; a bad match is refused with the reason, and nothing is created.
A rule whose match contains, or is contained in, that of another enabled rule of the source is
created all the same, with a warning on stderr per such rule (``sources.overlaps``): a delivery
both match becomes two todos.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard.lib.text import integer_argument
from switchboard.models import Endpoint
from todos.intake.sources import RULE_TIME_FIELDS, Overlap, create_rule, overlaps
from todos.management.commands.create_source import problems
from todos.models import Source


class Command(BaseCommand):
    help = "Add a routing rule to a webhook source; print its id on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--source", required=True, help="The source's slug.")
        parser.add_argument("--endpoint", required=True, help="The endpoint that gets the todos.")
        parser.add_argument("--queue", required=True, help="The endpoint's queue for the todos.")
        parser.add_argument(
            "--match", default="{}", help="The match, as JSON (default {}: every delivery)."
        )
        parser.add_argument("--name", default="", help="What the rule is for, in a few words.")
        parser.add_argument("--title", default="", help="Title template, e.g. 'CI: {{ a.b }}'.")
        parser.add_argument("--template", default="", help="Work order template.")
        parser.add_argument(
            "--max-attempts", type=integer_argument, default=5, help="Budget per todo."
        )
        parser.add_argument(
            "--position",
            type=integer_argument,
            help="Evaluation order (default: after the last rule).",
        )
        parser.add_argument("--disabled", action="store_true", help="Create it switched off.")
        # Time on the todos it creates, counted from the delivery's arrival (Rule's fields).
        parser.add_argument(
            "--priority",
            type=integer_argument,
            default=0,
            help="Higher is claimed first (-1000..1000).",
        )
        parser.add_argument(
            "--delay",
            type=integer_argument,
            dest="delay_seconds",
            help="Seconds before it is claimable.",
        )
        parser.add_argument(
            "--start-within",
            type=integer_argument,
            dest="start_within_seconds",
            help="Seconds to be claimed in, else dead-lettered.",
        )
        parser.add_argument(
            "--finish-within",
            type=integer_argument,
            dest="finish_within_seconds",
            help="Seconds to be finished in, else dead-lettered.",
        )
        parser.add_argument(
            "--run-timeout",
            type=integer_argument,
            dest="run_timeout_seconds",
            help="One attempt's limit in seconds (at least 10).",
        )
        parser.add_argument(
            "--dedupe-key-path",
            dest="dedupe_key_path",
            help="A dotted payload path whose value is the todo's dedupe key.",
        )
        parser.add_argument(
            "--max-cost-usd",
            type=Decimal,
            dest="max_cost_usd",
            help="Each todo's cost cap in USD: past it, it stops budget_exceeded.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = Source.objects.filter(slug=options["source"]).first()
        if source is None:
            raise CommandError(f"no source {options['source']!r}")
        endpoint = Endpoint.objects.filter(slug=options["endpoint"]).first()
        if endpoint is None:
            raise CommandError(f"no endpoint {options['endpoint']!r}")
        try:
            match = json.loads(options["match"])
        except ValueError as exc:
            raise CommandError(f"match: not JSON ({exc})") from None
        try:
            rule = create_rule(
                source,
                endpoint,
                queue=options["queue"],
                match=match,
                name=options["name"],
                title_template=options["title"],
                work_order_template=options["template"],
                max_attempts=options["max_attempts"],
                position=options["position"],
                enabled=not options["disabled"],
                **{name: options[name] for name in RULE_TIME_FIELDS},
            )
        except ValidationError as exc:
            raise CommandError(problems(exc)) from None
        self.stderr.write(
            # Numbered as the Board numbers rules, by position (the order they are tried in);
            # the id, which stdout prints for scripts, in brackets.
            f"Rule #{rule.position} (id {rule.id}) on {source.slug}: matching deliveries become"
            " todos on "
            f"{endpoint.slug}/{rule.queue}.",
            style_func=self.style.SUCCESS,
        )
        for overlap in overlaps(rule):
            self.stderr.write(_warning(overlap), style_func=self.style.WARNING)
        self.stdout.write(str(rule.id))


def _warning(overlap: Overlap) -> str:
    other = overlap.other
    named = f"rule #{other.position} (id {other.id}{f', {other.name!r}' if other.name else ''})"
    routes = f"{other.endpoint.slug}/{other.queue}"
    if overlap.relation == "narrower":
        said = f"this rule also matches every delivery {named} routes to {routes}"
    else:
        match = "the same match" if overlap.relation == "same" else "a broader match"
        said = f"{named}, with {match}, already routes every delivery this one matches to {routes}"
    return f"Warning: {said}; each such delivery becomes two todos."
