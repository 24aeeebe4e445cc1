"""``manage.py reprice --since DATE``: price again every model call started since DATE with the
price table as it stands, then rebuild from the spans the totals of the todos and attempts
those calls belong to and the usage_hours from DATE on, or from the earliest hour one of those
calls counts in (the hour it arrived: ``sql/store.sql``) if that is earlier
(``sql/reprice_*.sql``).

Offline work: the spans are read in key order in batches (a scan: no live read needs an index
on their start), and the rollups are rebuilt in one transaction. An ingest that commits spans
of the same todos while it runs may have its additions overwritten; run it when the agents are
quiet, or run it again after.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from otlp import prices
from otlp.usage import Usage
from switchboard.lib.sql import fetch_all, fetch_one, load

_SQL = Path(__file__).parent / "sql"
READ = load(_SQL, "reprice_read")
WRITE = load(_SQL, "reprice_write")
ROLLUPS = load(_SQL, "reprice_rollups")
CLEAR_HOURS = load(_SQL, "reprice_clear_hours")
HOURS = load(_SQL, "reprice_hours")
BATCH = 2000


@dataclass(frozen=True, slots=True)
class Repriced:
    spans: int  # model calls read
    changed: int  # whose cost changed
    unpriced: int  # now without a price
    todos: int
    attempts: int
    hours: int


def reprice(since: dt.datetime) -> Repriced:
    prices.invalidate()
    book = prices.book()
    spans = changed = unpriced = 0
    # The hours are rebuilt from the earliest one a repriced call counts in: a call counts in
    # the hour it arrived (sql/store.sql), which is before ``since`` when its start is later
    # than its arrival (a clock ahead).
    hours_since = since
    after: tuple[str, bytes, bytes] = ("", b"", b"")
    while True:
        rows = fetch_all(
            READ,
            {
                "since": since,
                "after_todo": after[0],
                "after_trace": after[1],
                "after_span": after[2],
                "limit": BATCH,
            },
        )
        if not rows:
            break
        costs = []
        for r in rows:
            usage = Usage(
                model=r["model"],
                provider=r["provider"] or r["system"] or r["llm_provider"],
                input=r["input_tokens"],
                output=r["output_tokens"],
                cache_read=r["cache_read_tokens"],
                cache_write=r["cache_write_tokens"],
                reasoning=r["reasoning_tokens"],
            )
            cost = book.price(usage, r["start_at"].astimezone(dt.UTC))
            hours_since = min(hours_since, r["received_at"])
            unpriced += cost is None
            costs.append(cost)
        written = fetch_one(
            WRITE,
            {
                "todo_ids": [r["todo_id"] for r in rows],
                "trace_ids": [bytes(r["trace_id"]) for r in rows],
                "span_ids": [bytes(r["span_id"]) for r in rows],
                "costs": costs,
            },
        )
        spans += len(rows)
        changed += written["changed"] if written else 0
        last = rows[-1]
        after = (last["todo_id"], bytes(last["trace_id"]), bytes(last["span_id"]))
    with transaction.atomic():
        totals = fetch_one(ROLLUPS, {"since": since}) or {"todos": 0, "attempts": 0}
        fetch_one(CLEAR_HOURS, {"since": hours_since})
        hours = fetch_one(HOURS, {"since": hours_since}) or {"hours": 0}
    return Repriced(spans, changed, unpriced, totals["todos"], totals["attempts"], hours["hours"])
