"""Serve the product: migrate, seed an empty database, run the sweeper loop, serve with daphne.

This is the README's run command. Everything runs in this one process, so the embedded
PostgreSQL (when DATABASE_URL is unset) starts once, before the migrations, and stops when
Ctrl-C ends the server (or runs on while another process, a manage.py command say, still uses
it: switchboard/embedded.py).
"""

from __future__ import annotations

import os
import socket
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard.lib.text import integer_argument


def _check_free(host: str, port: int) -> None:
    """``CommandError`` when ``host:port`` cannot be listened on (another server holds it):
    said before anything is migrated, seeded or noted, where daphne would say it only after."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise CommandError(f"cannot listen on {host}:{port}: {exc}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        # As the server will bind it: a port left in TIME_WAIT by a server just stopped is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise CommandError(
                f"cannot listen on {host}:{port}: {exc.strerror} (is another server running"
                " there? PORT=… picks another port)"
            ) from None


class Command(BaseCommand):
    help = "Migrate, seed an empty database, and serve Switchboard with daphne."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument(
            "--port", type=integer_argument, default=int(os.environ.get("PORT", "8000"))
        )
        parser.add_argument("--no-seed", action="store_true", help="Do not seed an empty database.")
        parser.add_argument(
            "--no-sweeper", action="store_true", help="Do not run the sweeper loop in this process."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # daphne, with the body caps applied before a body is read (switchboard/lib/server.py).
        from django.conf import settings

        from switchboard import embedded
        from switchboard.lib.server import CommandLineInterface, require_proven

        require_proven()  # before migrating: a server that could not cap bodies does not start
        # manage.py started it already; this covers call_command("serve") and costs nothing.
        embedded.ensure_running()
        host, port = options["host"], options["port"]
        _check_free(host, port)
        url = embedded.server_url(host, port)
        # For the commands run beside this server in the checkout: manage.py reads its database,
        # seed_demo --reissue its address.
        embedded.record_server(
            settings.DATA_DIR,
            settings.DATABASE_URL,
            is_embedded=settings.EMBEDDED_PGDATA is not None,
            url=url,
        )
        call_command("migrate", interactive=False, verbosity=0)
        if not options["no_seed"]:
            call_command("seed_demo", if_empty=True, host=host, port=port)
        if not options["no_sweeper"]:
            from todos.sweeps import start_background_sweeper

            start_background_sweeper()
        # The second line is for pasting: the guides' commands read the address from it
        # (docs/README.md, "Code blocks").
        self.stdout.write(
            f"Switchboard on {url}/  (Ctrl-C stops it)\n"
            f"  export SWITCHBOARD_URL={url}   # the guides' commands read it"
        )
        CommandLineInterface().run(
            ["--bind", host, "--port", str(port), "switchboard.asgi:application"]
        )
