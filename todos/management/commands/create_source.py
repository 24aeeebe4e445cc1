"""Create a webhook source at ``POST /hooks/{slug}``.

Stdout carries the new secret and nothing else, so ``SECRET=$(manage.py create_source …)``
captures it (and nothing at all with ``--no-verify``); the URL and the rest go to stderr.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard.models import Human, Team
from todos.intake.sources import create_source
from todos.models import SignatureScheme


def problems(exc: ValidationError) -> str:
    if hasattr(exc, "error_dict"):
        return "; ".join(
            f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
        )
    return " ".join(exc.messages)


class Command(BaseCommand):
    help = "Create a webhook source owned by an operator or a team; print its secret (once)."

    def add_arguments(self, parser: CommandParser) -> None:
        owner = parser.add_mutually_exclusive_group(required=True)
        owner.add_argument("--owner", help="The owning operator's username.")
        owner.add_argument(
            "--team", help="The owning team's name (its rules route to its endpoints)."
        )
        parser.add_argument("--slug", required=True, help="Names the source: /hooks/{slug}.")
        parser.add_argument("--name", default="", help="A human-readable name (default: slug).")
        parser.add_argument(
            "--no-verify",
            action="store_true",
            help="Accept unsigned deliveries (no secret). Only for senders that cannot sign.",
        )
        parser.add_argument(
            "--scheme",
            choices=SignatureScheme.values,
            default=SignatureScheme.GITHUB,
            help="How deliveries are signed: github (X-Hub-Signature-256 over the body, the"
            " default) or standard-webhooks (webhook-id/-timestamp/-signature, whsec_ secret).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        owner = team = None
        if options["team"] is not None:
            team = Team.objects.filter(name=options["team"]).first()
            if team is None:
                raise CommandError(f"no team named {options['team']!r}")
        else:
            owner = Human.objects.filter(username=options["owner"]).first()
            if owner is None:
                raise CommandError(f"no operator named {options['owner']!r}")
        try:
            source, secret = create_source(
                owner,
                options["slug"],
                team=team,
                name=options["name"],
                verify=not options["no_verify"],
                scheme=options["scheme"],
            )
        except ValidationError as exc:
            raise CommandError(problems(exc)) from None
        how = "signed with the secret that follows, shown once" if secret else "unsigned"
        self.stderr.write(
            f"Created source {source.slug} for {source.owner_label}: "
            f"POST /hooks/{source.slug} ({how}).",
            style_func=self.style.SUCCESS,
        )
        if secret:
            self.stdout.write(secret)
