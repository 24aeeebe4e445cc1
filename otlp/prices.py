"""Prices: the table's only writer, the CSV format, and the ingest's price book.

A row prices one model (or every model a ``*`` pattern matches, ``claude-sonnet-4*``) of one
provider (empty: any) from ``effective_from`` on, until the next row of the same model and
provider; a span is priced by the row in effect on its start's UTC day. Of the rows whose
model matches, an exact name wins over a pattern and a longer pattern over a shorter one.

A span's cost (USD; prices are per million tokens; input counts its cache tokens and output
its reasoning, as the GenAI conventions do, ``otlp/usage.py``)::

    (input - cache_read - cache_write) * input + cache_read * cache_read
      + cache_write * cache_write + (output - reasoning) * output + reasoning * reasoning

A type the span used (a count above zero) whose price is empty, or a model no row covers,
leaves the span unpriced: its tokens are counted as unpriced, never as $0.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fnmatch import fnmatchcase
from pathlib import Path

from django.db import transaction

from otlp.models import PRICE_FIELDS, Price
from otlp.usage import Usage

HEADER = ("model", "provider", "effective_from", *PRICE_FIELDS)
DEFAULT_FILE = Path(__file__).parent / "prices" / "default.csv"
MILLION = Decimal(1_000_000)
# The most a price may be (USD per million tokens): beyond it a typo, not a price.
PRICE_MAX = Decimal(1_000_000)
# The finest a price may be (the columns' scale, numeric(14, 6)).
PRICE_STEP = Decimal("0.000001")
MODEL_MAX_CHARS = 128
# How long the ingest's price book trusts what it read (seconds): a loaded price applies to
# spans received after at most this long; ``manage.py reprice`` corrects what came before.
BOOK_TTL = 5.0


class PriceError(ValueError):
    """A price file or row refused; ``line`` is the file's line (1 is the header)."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(f"line {line}: {message}" if line else message)
        self.line = line


@dataclass(frozen=True, slots=True)
class PriceRow:
    model: str
    provider: str
    effective_from: dt.date
    input: Decimal | None
    output: Decimal | None
    cache_read: Decimal | None
    cache_write: Decimal | None
    reasoning: Decimal | None

    @property
    def key(self) -> tuple[str, str, dt.date]:
        return (self.model, self.provider, self.effective_from)


def _price(text: str, field: str, line: int) -> Decimal | None:
    text = text.strip()
    if not text:
        return None
    # Decimal also reads digits of other scripts (U+0661) and underscores ("1_0" is 10): a
    # price file is held to what a person types as an amount, as queue amounts are
    # (todos/limits.py's check_cost).
    if not text.isascii() or "_" in text:
        raise PriceError(line, f"{field}: not a number: {text[:40]!r}")
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise PriceError(line, f"{field}: not a number: {text[:40]!r}") from None
    return check_price(value, field, line)


def check_price(value: Decimal, field: str, line: int | None = None) -> Decimal:
    """A price (USD per million tokens) as a file row or the admin's form may set it: finite,
    not negative, at most ``PRICE_MAX``, and no finer than the column's millionth (a finer one
    is refused, never rounded: 0.0000001 would be stored as a $0 price)."""
    if not value.is_finite():
        raise PriceError(line, f"{field}: must be a finite number")
    if value < 0:
        raise PriceError(line, f"{field}: a price cannot be negative")
    if value > PRICE_MAX:
        raise PriceError(line, f"{field}: above {PRICE_MAX} USD per million tokens")
    micros = value.quantize(PRICE_STEP)
    if micros != value:
        raise PriceError(line, f"{field}: must have at most 6 decimals")
    return micros


def check_model(text: str, line: int | None = None) -> str:
    """A row's model (a name, or a ``*`` pattern) as a file row or the admin's form may set it."""
    model = text.strip()
    if not model or len(model) > MODEL_MAX_CHARS:
        raise PriceError(line, f"model: 1 to {MODEL_MAX_CHARS} characters")
    if any(c in model for c in "?[]\x00"):
        raise PriceError(line, "model: a name, or a pattern with * only")
    return model


def parse(text: str) -> list[PriceRow]:
    """The rows of a price file: the header ``HEADER`` (lines starting with ``#`` before and
    among the rows are comments), then one row a line. Refuses the whole file on a bad row or
    two rows of one model and provider from the same date (overlapping ranges)."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if not line.startswith("#")]
    lines = [(n, line) for n, line in lines if line.strip()]
    if not lines:
        raise PriceError(None, "empty file")
    first, header = lines[0]
    if tuple(h.strip() for h in next(csv.reader([header]))) != HEADER:
        raise PriceError(first, "the header must be " + ",".join(HEADER))
    rows: dict[tuple[str, str, dt.date], PriceRow] = {}
    for n, cells in zip(
        (n for n, _ in lines[1:]), csv.reader(line for _, line in lines[1:]), strict=True
    ):
        if len(cells) != len(HEADER):
            raise PriceError(n, f"{len(HEADER)} cells expected, {len(cells)} found")
        try:
            day = dt.date.fromisoformat(cells[2].strip())
        except ValueError:
            raise PriceError(n, "effective_from: a date, YYYY-MM-DD") from None
        row = PriceRow(
            check_model(cells[0], n),
            cells[1].strip().lower(),
            day,
            *(_price(c, f, n) for c, f in zip(cells[3:], PRICE_FIELDS, strict=True)),
        )
        if row.key in rows:
            raise PriceError(n, f"{row.model} ({row.provider or 'any'}) from {day} twice")
        rows[row.key] = row
    return list(rows.values())


def load(rows: Sequence[PriceRow], source: str) -> tuple[int, int]:
    """Write ``rows``: a row of a model, provider and date already in the table replaces it;
    the others are added. Returns (added, replaced). One transaction."""
    added = replaced = 0
    with transaction.atomic():
        for row in rows:
            _, created = Price.objects.update_or_create(
                model=row.model,
                provider=row.provider,
                effective_from=row.effective_from,
                defaults={f: getattr(row, f) for f in PRICE_FIELDS} | {"source": source[:500]},
            )
            added += created
            replaced += not created
    invalidate()
    return added, replaced


def dump(prices: Iterable[Price]) -> str:
    """The rows as a price file (``manage.py prices show``), loadable as it is."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for p in prices:
        writer.writerow(
            [p.model, p.provider, p.effective_from.isoformat()]
            + [
                "" if getattr(p, f) is None else f"{getattr(p, f).normalize():f}"
                for f in PRICE_FIELDS
            ]
        )
    return out.getvalue()


# --- pricing -----------------------------------------------------------------------------------


def cost(usage: Usage, row: PriceRow | Price) -> Decimal | None:
    """The span's cost under ``row``; None when a type it used has no price."""
    parts = (
        (usage.input - usage.cache_read - usage.cache_write, row.input),
        (usage.cache_read, row.cache_read),
        (usage.cache_write, row.cache_write),
        (usage.output - usage.reasoning, row.output),
        (usage.reasoning, row.reasoning),
    )
    total = Decimal(0)
    for n, price in parts:
        if n:
            if price is None:
                return None
            total += n * price
    return total / MILLION


class PriceBook:
    """The price table in memory, re-read every ``BOOK_TTL`` seconds; per model and provider,
    the matching rows newest first (memoised: a batch names a handful of models)."""

    def __init__(self, rows: Sequence[PriceRow]) -> None:
        self._rows = list(rows)
        self._memo: dict[tuple[str, str | None], list[PriceRow]] = {}

    def rows_for(self, model: str, provider: str | None) -> list[PriceRow]:
        key = (model, provider)
        found = self._memo.get(key)
        if found is None:
            lowered = provider.lower() if provider else None
            matching = [
                r
                for r in self._rows
                if (not r.provider or lowered is None or r.provider == lowered)
                and (r.model == model or ("*" in r.model and fnmatchcase(model, r.model)))
            ]
            # Exact first, then the longest pattern; within one, the newest first.
            matching.sort(
                key=lambda r: (r.model == model, len(r.model), bool(r.provider), r.effective_from),
                reverse=True,
            )
            if matching:
                best = (matching[0].model, matching[0].provider)
                matching = [r for r in matching if (r.model, r.provider) == best]
            if len(self._memo) > 10_000:
                self._memo.clear()
            self._memo[key] = found = matching
        return found

    def price(self, usage: Usage, start: dt.datetime | dt.date) -> Decimal | None:
        """The cost of ``usage`` for a span that started at ``start``; None: unpriced."""
        if usage.model is None:
            return None
        day = start.date() if isinstance(start, dt.datetime) else start
        for row in self.rows_for(usage.model, usage.provider):
            if row.effective_from <= day:
                return cost(usage, row)
        return None


def _read() -> PriceBook:
    return PriceBook(
        [
            PriceRow(
                p.model,
                p.provider,
                p.effective_from,
                *(getattr(p, f) for f in PRICE_FIELDS),
            )
            for p in Price.objects.all()
        ]
    )


_lock = threading.Lock()
_book: tuple[float, PriceBook] | None = None


def book() -> PriceBook:
    """The process's price book, re-read from the table once ``BOOK_TTL`` has passed."""
    global _book
    now = time.monotonic()
    current = _book
    if current is not None and now - current[0] < BOOK_TTL:
        return current[1]
    with _lock:
        if _book is None or now - _book[0] >= BOOK_TTL:
            _book = (now, _read())
        return _book[1]


def invalidate() -> None:
    """Forget the book: the next span re-reads the table (after a load in this process)."""
    global _book
    _book = None
