"""OAuth connections from the command line: list an endpoint's, revoke one or all.

``manage.py oauth list --endpoint SLUG`` prints one line per connection (client id, surface,
scopes, granted by, last use); ``manage.py oauth revoke --endpoint SLUG --client CLIENT_ID``
(or ``--all``) revokes as the endpoint page's Revoke does: the client's next request is refused
(switchboard/oauth.py).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from oauth2_provider.models import Application

from switchboard import oauth
from switchboard.models import Endpoint


class Command(BaseCommand):
    help = "List or revoke an endpoint's OAuth connections (chat apps signed in with OAuth)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="Print the endpoint's connections.")
        listing.add_argument("--endpoint", required=True, help="The endpoint's slug.")
        revoke = sub.add_parser("revoke", help="Revoke a client's access to the endpoint.")
        revoke.add_argument("--endpoint", required=True, help="The endpoint's slug.")
        which = revoke.add_mutually_exclusive_group(required=True)
        which.add_argument("--client", help="The client id (as `oauth list` prints it).")
        which.add_argument("--all", action="store_true", help="Every connection of the endpoint.")

    def handle(self, *args: Any, **options: Any) -> None:
        endpoint = Endpoint.objects.filter(slug=options["endpoint"]).first()
        if endpoint is None:
            raise CommandError(f"no endpoint named {options['endpoint']!r}")
        if options["action"] == "list":
            self._list(endpoint)
            return
        if options["all"]:
            count = oauth.revoke_all(endpoint)
        else:
            application = Application.objects.filter(client_id=options["client"]).first()
            if application is None:
                raise CommandError(f"no client with id {options['client']!r}")
            count = oauth.revoke_connection(endpoint, application.pk)
        self.stdout.write(f"revoked {count} token{'s' if count != 1 else ''} of {endpoint.slug}")

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
