"""Create an endpoint (an agent identity) and mint its first key.

Stdout carries the key and nothing else, so ``KEY=$(manage.py create_endpoint …)`` captures it;
everything else goes to stderr. The key is shown this once: only its hash is stored.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard import credentials
from switchboard.models import DRAIN_VERBS, Human, Team


def split_verbs(text: str) -> list[str]:
    """``text``, comma-separated verbs, as a list; ``credentials`` checks and orders them."""
    return [part.strip() for part in text.split(",") if part.strip()]


class Command(BaseCommand):
    help = "Create an endpoint owned by an operator or a team; print its new key (once) on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        owner = parser.add_mutually_exclusive_group(required=True)
        owner.add_argument("--owner", help="The owning operator's username.")
        owner.add_argument("--team", help="The owning team's name (its members see its todos).")
        parser.add_argument(
            "--slug", required=True, help="Names the endpoint in URLs: /mcp/{slug}, /otlp/{slug}."
        )
        parser.add_argument("--name", help="A human-readable name (default: the slug).")
        parser.add_argument(
            "--verbs",
            default=",".join(DRAIN_VERBS),
            help=f"Comma-separated verbs: the MCP tools it may call (default:"
            f" {','.join(DRAIN_VERBS)}), request_input and reject for A2A holders, a2a to"
            " accept A2A requesters at /a2a/{slug}, and submit for requesters over MCP"
            " (submit_todo, MCP Tasks).",
        )

        parser.add_argument(
            "--push-url",
            default="",
            help="Ring this URL (a signed POST) when a queue has work; its push secret is printed"
            " on stderr, once. Checked as the sender checks it: a private or loopback address"
            " needs SWITCHBOARD_PUSH_ALLOW_PRIVATE=true in this command's environment too.",
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
            credentials.check_push_url(options["push_url"])
            endpoint, key, plaintext = credentials.create_endpoint(
                owner,
                team=team,
                name=options["name"] or options["slug"],
                slug=options["slug"],
                verbs=split_verbs(options["verbs"]),
                push_url=options["push_url"] or None,
            )
        except ValidationError as exc:
            problems = "; ".join(
                f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
            )
            raise CommandError(problems) from None
        self.stderr.write(
            f"Created endpoint {endpoint.slug} for {endpoint.owner_label} "
            f"(verbs: {', '.join(endpoint.verbs) or 'none'}); key {key.prefix}… follows, "
            "shown once.",
            style_func=self.style.SUCCESS,
        )
        if endpoint.push_secret:
            self.stderr.write(
                f"Push rings to {endpoint.push_url} are signed with this secret (shown once):"
                f" {endpoint.push_secret}"
            )
        self.stdout.write(plaintext)
