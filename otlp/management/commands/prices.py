"""``manage.py prices load FILE`` and ``manage.py prices show``: the price table from the shell.

``load`` reads a CSV with the header ``model,provider,effective_from,input,output,cache_read,
cache_write,reasoning`` (USD per million tokens; an empty cell is no price for that type;
lines starting with ``#`` are comments) and writes it in one transaction: a row of a model,
provider and date already in the table replaces it. A bad file changes nothing and exits 1
naming its line. ``show`` prints the table as a file ``load`` takes back. After a load, run
``manage.py reprice --since DATE`` for spans already priced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from otlp import prices
from otlp.models import Price


class Command(BaseCommand):
    help = "Load a price file into the price table (load FILE), or print the table (show)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("load", "show"))
        parser.add_argument("file", nargs="?", help="load: the CSV file ('-' for stdin).")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "show":
            self.stdout.write(prices.dump(Price.objects.all()), ending="")
            return
        name = options["file"]
        if not name:
            raise CommandError("prices load needs a FILE")
        try:
            text = (
                self.stdin.read()  # type: ignore[attr-defined]
                if name == "-"
                else Path(name).read_text(encoding="utf-8")
            )
        except OSError as exc:
            raise CommandError(f"cannot read {name}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise CommandError(f"cannot read {name}: not UTF-8 text at byte {exc.start}") from None
        try:
            rows = prices.parse(text)
        except prices.PriceError as exc:
            raise CommandError(f"refused: {exc}") from None
        added, replaced = prices.load(rows, source=Path(name).name if name != "-" else "stdin")
        self.stdout.write(f"Loaded {len(rows)} prices: {added} added, {replaced} replaced.")
