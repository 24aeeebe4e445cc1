"""Create an endpoint (an agent identity) and mint its first key.

Stdout carries the key and nothing else, so ``KEY=$(manage.py create_endpoint …)`` captures it;
everything else goes to stderr. The key is shown this once: only its hash is stored.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError, transaction

from switchboard.credentials import mint_key
from switchboard.models import DRAIN_VERBS, Endpoint, Human, Verb


def parse_verbs(text: str) -> list[str]:
    """``text`` (comma-separated verbs) as a list in the enumeration's order; raise on unknowns."""
    given = {part.strip() for part in text.split(",") if part.strip()}
    unknown = given - set(Verb.values)
    if unknown:
        raise CommandError(
            f"unknown verbs: {', '.join(sorted(unknown))}; known: {', '.join(Verb.values)}"
        )
    return [verb for verb in Verb.values if verb in given]


class Command(BaseCommand):
    help = "Create an endpoint owned by an operator; print its new key (once) on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", required=True, help="The owning operator's username.")
        parser.add_argument(
            "--slug", required=True, help="Names the endpoint in URLs: /mcp/{slug}, /otlp/{slug}."
        )
        parser.add_argument("--name", help="A human-readable name (default: the slug).")
        parser.add_argument(
            "--verbs",
            default=",".join(DRAIN_VERBS),
            help=f"Comma-separated MCP tools it may call (default: {','.join(DRAIN_VERBS)}).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        owner = Human.objects.filter(username=options["owner"]).first()
        if owner is None:
            raise CommandError(f"no operator named {options['owner']!r}")
        endpoint = Endpoint(
            owner=owner,
            slug=options["slug"],
            name=options["name"] or options["slug"],
            verbs=parse_verbs(options["verbs"]),
        )
        try:
            endpoint.full_clean()
        except ValidationError as exc:
            problems = "; ".join(
                f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
            )
            raise CommandError(problems) from None
        try:
            with transaction.atomic():
                endpoint.save()
                key, plaintext = mint_key(endpoint)
        except IntegrityError:
            # The slug was taken between the check in full_clean and this insert.
            raise CommandError(f"slug: an endpoint named {endpoint.slug!r} exists") from None
        self.stderr.write(
            f"Created endpoint {endpoint.slug} for {owner.username} "
            f"(verbs: {', '.join(endpoint.verbs) or 'none'}); key {key.prefix}… follows, "
            "shown once.",
            style_func=self.style.SUCCESS,
        )
        self.stdout.write(plaintext)
