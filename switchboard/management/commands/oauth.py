"""OAuth connections from the command line: list an endpoint's, revoke one or all.

``manage.py oauth list --endpoint SLUG`` prints one line per connection, that is per grant (client
id, surface, scopes, client name, granted by, last use): a client many humans signed in with (a
Client ID Metadata Document's) is a line per human. ``manage.py oauth revoke --endpoint SLUG
--client CLIENT_ID`` revokes every grant of that client on the endpoint, ``--granter USERNAME``
only that human's, and ``--all`` every connection; each revokes as the endpoint page's Revoke
does: the client's next request is refused (switchboard/oauth.py).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from oauth2_provider.models import Application

from switchboard import oauth
from switchboard.models import Endpoint, Human


class Command(BaseCommand):
    help = "List or revoke an endpoint's OAuth connections (chat apps signed in with OAuth)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="Print the endpoint's connections, one per grant.")
        listing.add_argument("--endpoint", required=True, help="The endpoint's slug.")
        revoke = sub.add_parser("revoke", help="Revoke a client's access to the endpoint.")
        revoke.add_argument("--endpoint", required=True, help="The endpoint's slug.")
        which = revoke.add_mutually_exclusive_group(required=True)
        which.add_argument("--client", help="The client id (as `oauth list` prints it).")
        which.add_argument("--all", action="store_true", help="Every connection of the endpoint.")
        revoke.add_argument(
            "--granter",
            help="With --client: only the grant this human (a username) gave; without it,"
            " every human's grant of the client.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        endpoint = Endpoint.objects.filter(slug=options["endpoint"]).first()
        if endpoint is None:
            raise CommandError(f"no endpoint named {options['endpoint']!r}")
        if options["action"] == "list":
            self._list(endpoint)
            return
        if options["all"]:
            if options["granter"]:
                raise CommandError("--granter goes with --client, not --all")
            revoked = oauth.revoke_all(endpoint)
        else:
            application = Application.objects.filter(client_id=options["client"]).first()
            if application is None:
                raise CommandError(f"no client with id {options['client']!r}")
            user_id = None
            if options["granter"]:
                granter = Human.objects.filter(username=options["granter"]).first()
                if granter is None:
                    raise CommandError(f"no human named {options['granter']!r}")
                user_id = granter.pk
            revoked = oauth.revoke_connection(endpoint, application.pk, user_id)
        tokens, grants = revoked.tokens, revoked.grants
        self.stdout.write(
            f"revoked {tokens} token{'s' if tokens != 1 else ''} of {endpoint.slug}"
            f" ({grants} grant{'s' if grants != 1 else ''})"
        )

    def _list(self, endpoint: Endpoint) -> None:
        rows = oauth.connections(endpoint)
        ids = dict(
            Application.objects.filter(pk__in=[c.application_id for c in rows]).values_list(
                "pk", "client_id"
            )
        )
        for c in rows:
            last = c.last_used.isoformat() if c.last_used else "never"
            self.stdout.write(
                f"{ids.get(c.application_id, '?')}\t{c.kind}\t{' '.join(c.scopes)}\t"
                f"{c.client}\tgranted by {c.granted_by}\tlast used {last}"
            )
        if not rows:
            self.stderr.write(f"{endpoint.slug} has no connections")
