"""Seed demo data (switchboard.demo) and print how to get in: URL, login, key, webhook secret.

``serve`` runs ``seed_demo --if-empty`` on every start, so a fresh database has something to
look at and an existing one is left alone. The credentials are printed this once; ``--reissue``
prints new ones for a demo seeded before (the old agent key and webhook secret stop working).

The URLs printed are the server's: ``--host``/``--port`` when given (``serve`` gives its own),
else the note of the server running in this checkout (``switchboard.embedded.record_server``),
else ``HOST``/``PORT`` from the environment, else ``make run``'s default, 127.0.0.1:8000.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard import demo, embedded

PASSWORD_ENV = "SWITCHBOARD_DEMO_PASSWORD"  # noqa: S105 (the variable's name)


class Command(BaseCommand):
    help = "Create a demo operator, agent endpoint, webhook source and a dozen todos."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--if-empty",
            action="store_true",
            help="Do nothing when any operator exists (what serve runs on start).",
        )
        parser.add_argument(
            "--reissue",
            action="store_true",
            help="Give the existing demo a new password, agent key and webhook secret, and print"
            " them (the old key is revoked, the old secret stops working).",
        )
        # Only for the printed URLs; a caller that knows where it listens may say so.
        parser.add_argument("--host", help="The server's host, for the URLs printed.")
        parser.add_argument("--port", help="The server's port, for the URLs printed.")

    def handle(self, *args: Any, **options: Any) -> None:
        chosen = os.environ.get(PASSWORD_ENV) or None
        if options["reissue"]:
            self._reissue(chosen, options)
            return
        try:
            seeded = demo.seed(chosen, if_empty=options["if_empty"])
        except demo.AlreadySeeded as exc:
            raise CommandError(f"{exc}; nothing seeded (use --if-empty to skip quietly)") from None
        if seeded is None:
            if options["verbosity"] >= 2:
                self.stdout.write("seed_demo: operators exist; nothing seeded.")
            return
        base = _base_url(options)
        password = f"(as set in {PASSWORD_ENV})" if chosen else seeded.password
        lines = [
            "Switchboard demo data created. The secrets below are shown once.",
            f"  URL             {base}/",
            f"  Board login     {base}/login/  user {seeded.username} (admin: {base}/admin/)",
            f"  Password        {password}",
            f"  Agent key       {seeded.key}  (endpoint {demo.ENDPOINT_SLUG}: {base}/mcp/"
            f"{demo.ENDPOINT_SLUG})",
            f"  Webhook secret  {seeded.webhook_secret}  (POST {base}/hooks/{demo.SOURCE_SLUG},"
            " a GitHub check_run failure becomes a todo: docs/guides/webhooks.md)",
            f"  Todos           {len(seeded.todo_ids)} on queues {demo.CI_QUEUE}, "
            f"{demo.TRIAGE_QUEUE}",
        ]
        self.stdout.write("\n".join(lines))

    def _reissue(self, chosen: str | None, options: dict[str, Any]) -> None:
        if options["if_empty"]:
            raise CommandError("--reissue and --if-empty do not go together")
        try:
            new = demo.reissue(chosen)
        except demo.NotSeeded as exc:
            raise CommandError(f"{exc} (seed it first: manage.py seed_demo)") from None
        base = _base_url(options)
        password = f"(as set in {PASSWORD_ENV})" if chosen else new.password
        lines = [
            "Switchboard demo credentials re-issued. The secrets below are shown once;"
            f" the old ones no longer work ({new.keys_revoked} key(s) revoked).",
            f"  Board login     {base}/login/  user {new.username}",
            f"  Password        {password}",
            f"  Agent key       {new.key}  (endpoint {demo.ENDPOINT_SLUG}: {base}/mcp/"
            f"{demo.ENDPOINT_SLUG})",
            f"  Webhook secret  {new.webhook_secret}  (POST {base}/hooks/{demo.SOURCE_SLUG})",
        ]
        self.stdout.write("\n".join(lines))


def _base_url(options: dict[str, Any]) -> str:
    """Where the printed URLs point (the module's docstring says in which order it looks)."""
    host, port = options["host"], options["port"]
    if host is None and port is None:
        note = embedded.running_server(Path(settings.DATA_DIR))
        if note is not None and isinstance(note.get("url"), str):
            return str(note["url"])
    return embedded.server_url(
        host or os.environ.get("HOST") or "127.0.0.1", port or os.environ.get("PORT") or "8000"
    )
