"""Create an operator: a human who logs in to the Board (and, with --staff, to the admin).

The password is read twice from the terminal, or once from stdin with --password-stdin (for
scripts: ``printf '%s\\n' "$PW" | manage.py create_operator alice --password-stdin``). Django's
password validators run either way.
"""

from __future__ import annotations

import getpass
import sys
from typing import Any

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError, transaction

from switchboard.models import Human


class Command(BaseCommand):
    help = "Create an operator (a human who logs in to the Board)."
    # Tests hand in a stdin of their own, as Django's createsuperuser allows.
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--email", default="", help="The operator's email address.")
        parser.add_argument(
            "--staff", action="store_true", help="May log in to the admin (is_staff)."
        )
        parser.add_argument(
            "--superuser",
            action="store_true",
            help="Holds every admin permission (implies --staff).",
        )
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="Read the password from the first line of stdin instead of prompting.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username: str = options["username"]
        try:
            Human._meta.get_field("username").clean(username, None)
        except ValidationError as exc:
            raise CommandError(f"username {username!r}: {' '.join(exc.messages)}") from None
        if Human.objects.filter(username=username).exists():
            raise CommandError(f"an operator named {username!r} already exists")

        password = self._read_password(options)
        candidate = Human(username=username, email=options["email"])
        try:
            validate_password(password, user=candidate)
        except ValidationError as exc:
            raise CommandError("password refused: " + " ".join(exc.messages)) from None

        staff = options["staff"] or options["superuser"]
        try:
            with transaction.atomic():
                Human.objects.create_user(
                    username,
                    email=options["email"],
                    password=password,
                    is_staff=staff,
                    is_superuser=options["superuser"],
                )
        except IntegrityError:
            # Someone created the name between the check above and this insert.
            raise CommandError(f"an operator named {username!r} already exists") from None
        role = "superuser" if options["superuser"] else "staff" if staff else "operator"
        self.stdout.write(f"Created {role} {username}.")

    def _read_password(self, options: dict[str, Any]) -> str:
        if options["password_stdin"]:
            stdin = options.get("stdin") or sys.stdin
            password = stdin.readline().rstrip("\r\n")
            if not password:
                raise CommandError("the password is empty (stdin gave an empty first line)")
            return password
        password = getpass.getpass("Password: ")
        if not password:
            raise CommandError("the password is empty")
        if getpass.getpass("Password (again): ") != password:
            raise CommandError("the two passwords differ")
        return password
