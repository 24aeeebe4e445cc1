"""Benchmark span retention: a day of spans dropped as a partition against the same rows deleted.

Run it alone: ``.venv/bin/python bench/span_retention.py`` (``--quick`` for a smoke run). It uses
``DATABASE_URL`` (else the embedded server, through settings) and TRUNCATEs ``todos`` there (the
spans go with them): point it at a database of its own.

Each round loads two past days of spans, ``--rows`` each, into their day partitions of
``todo_spans`` (otlp/migrations/0006_partitioned_spans.py), spread over ``--todos`` todos a day
and shaped like ``bench/otlp.py``'s (a model call's five GenAI attributes), with one INSERT …
SELECT a day, then VACUUM ANALYZE so both days start alike. Then, in an order that alternates
from round to round:

- **drop**: one day's retention as the sweeper does it, ``sb_span_partition_drop`` (the
  partition dropped while attached: otlp/partitions.py);
- **delete**: the other day's rows deleted by ``DELETE … WHERE received_at`` in its day: what
  retention costs as row deletes of the same rows, and then the ``VACUUM`` that must follow
  before the space is reused (timed apart).

Reported per round: the load (rows/s), the wall time of each, and the WAL each wrote
(``pg_current_wal_lsn`` before and after: cluster-wide, so another database's writes in the
same seconds count too).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402

from switchboard import credentials  # noqa: E402
from switchboard.models import Endpoint, Human  # noqa: E402

SLUG = "bench-span-retention"

# A day's spans: todos named for the day, spans spread over them, received across the day.
LOAD = """
INSERT INTO todo_spans (todo_id, trace_id, span_id, parent_span_id, attempt_seq, name, kind,
                        category, tool, status_code, service_name, start_at, end_at, attributes,
                        received_at, model, input_tokens, output_tokens)
SELECT 'td_' || substr(translate(md5(%(prefix)s || (i %% %(todos)s)), '0189', 'wxyz'), 1, 20),
       decode(md5(%(prefix)s || (i %% %(todos)s)), 'hex'),
       substr(decode(md5(%(prefix)s || i), 'hex'), 1, 8), NULL, NULL,
       (ARRAY['chat claude-sonnet-4', 'execute_tool read_file', 'invoke_agent fixer'])[i %% 3 + 1],
       'internal', (ARRAY['llm', 'tool', 'agent'])[i %% 3 + 1], 'read_file', 'ok', 'bench-agent',
       at, at + interval '500 microseconds',
       jsonb_build_object('gen_ai.operation.name', 'chat', 'gen_ai.request.model',
                          'claude-sonnet-4', 'gen_ai.usage.input_tokens', 1200 + i %% 100,
                          'gen_ai.usage.output_tokens', 80, 'gen_ai.tool.name', 'read_file'),
       at, 'claude-sonnet-4', 1200 + i %% 100, 80
  FROM generate_series(0, %(rows)s - 1) AS i,
       LATERAL (SELECT %(day)s::timestamp AT TIME ZONE 'UTC'
                       + (i * 86399.0 / %(rows)s) * interval '1 second' AS at) t
"""
TODOS = """
INSERT INTO todos (id, endpoint_id, queue, title, state, finished_at)
SELECT 'td_' || substr(translate(md5(%(prefix)s || i), '0189', 'wxyz'), 1, 20), %(endpoint)s,
       'retention', 'span retention bench ' || i, 'completed',
       now()
  FROM generate_series(0, %(todos)s - 1) AS i
"""


def lsn() -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_current_wal_lsn()::text")
        row = cur.fetchone()
    assert row is not None
    return str(row[0])


def wal_since(start: str) -> int:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)::bigint", [start])
        row = cur.fetchone()
    assert row is not None
    return int(row[0])


def timed(sql: str, params: list[object] | dict[str, object] | None = None) -> tuple[float, int]:
    """Run one statement in autocommit; its wall time and the cluster's WAL meanwhile."""
    start = lsn()
    t0 = time.perf_counter()
    with connection.cursor() as cur:
        cur.execute(sql, params)
    return time.perf_counter() - t0, wal_since(start)


def endpoint() -> Endpoint:
    human, _ = Human.objects.get_or_create(username="bench", defaults={"is_active": False})
    found = Endpoint.objects.filter(slug=SLUG).first()
    if found is None:
        found, _, _ = credentials.create_endpoint(
            human, name="span retention bench", slug=SLUG, verbs=["claim_next"]
        )
    return found


def today_minus(days: int) -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT ((now() AT TIME ZONE 'UTC')::date - %s)::text", [days])
        row = cur.fetchone()
    assert row is not None
    return str(row[0])


def partition(day: str) -> str:
    """The name of ``day``'s (YYYY-MM-DD) partition of todo_spans."""
    return f"todo_spans_p{day.replace('-', '')}"


def mb(n: int) -> str:
    return f"{n / 1e6:,.0f} MB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_500_000, help="spans in each day")
    parser.add_argument("--todos", type=int, default=2_000, help="todos each day's spans share")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20,000 spans a day")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.todos, args.rounds = 20_000, 100, 1
    connection.ensure_connection()
    connection.connection.autocommit = True
    ep = endpoint()
    print(
        f"database {settings.DATABASES['default'].get('NAME')}; {args.rows:,} spans a day over"
        f" {args.todos:,} todos; {args.rounds} round(s)"
    )
    drops: list[float] = []
    deletes: list[float] = []
    vacuums: list[float] = []
    for round_no in range(args.rounds):
        with connection.cursor() as cur:
            cur.execute("TRUNCATE todos, todo_attempts CASCADE")
        days = {"drop": today_minus(60 + 2 * round_no), "delete": today_minus(61 + 2 * round_no)}
        loaded = 0.0
        for what, day in days.items():
            prefix = f"{what}-{uuid.uuid4().hex}-"
            with connection.cursor() as cur:
                cur.execute("SELECT sb_span_partition_drop(%s::date)", [day])
                cur.execute("SELECT sb_span_partition_add(%s::date)", [day])
                cur.execute(TODOS, {"prefix": prefix, "endpoint": ep.id, "todos": args.todos})
            seconds, _ = timed(
                LOAD, {"prefix": prefix, "todos": args.todos, "rows": args.rows, "day": day}
            )
            loaded += seconds
        for part in days.values():
            timed(f"VACUUM ANALYZE {partition(part)}")
        with connection.cursor() as cur:
            cur.execute("SELECT pg_total_relation_size(%s)", [partition(days["drop"])])
            row = cur.fetchone()
            size = int(row[0]) if row else 0
        print(
            f"round {round_no + 1}: loaded {2 * args.rows:,} spans in {loaded:.1f} s"
            f" ({2 * args.rows / loaded:,.0f}/s); a day's partition holds {mb(size)}"
        )
        order = ("drop", "delete") if round_no % 2 == 0 else ("delete", "drop")
        for what in order:
            day = days[what]
            if what == "drop":
                seconds, wal = timed("SELECT sb_span_partition_drop(%s::date)", [day])
                drops.append(seconds)
                print(f"  drop:   {seconds * 1000:10,.1f} ms, WAL {mb(wal)}")
            else:
                seconds, wal = timed(
                    "DELETE FROM todo_spans WHERE received_at >= %(day)s::timestamp AT TIME ZONE"
                    " 'UTC' AND received_at < (%(day)s::date + 1)::timestamp AT TIME ZONE 'UTC'",
                    {"day": day},
                )
                deletes.append(seconds)
                vacuum, vacuum_wal = timed(f"VACUUM {partition(day)}")
                vacuums.append(vacuum)
                print(
                    f"  delete: {seconds * 1000:10,.1f} ms, WAL {mb(wal)};"
                    f" then VACUUM {vacuum * 1000:,.1f} ms, WAL {mb(vacuum_wal)}"
                )
        with connection.cursor() as cur:  # the deleted day's empty partition goes too
            cur.execute("SELECT sb_span_partition_drop(%s::date)", [days["delete"]])
    print(
        f"median over {args.rounds} round(s): drop {statistics.median(drops) * 1000:,.1f} ms;"
        f" DELETE {statistics.median(deletes) * 1000:,.1f} ms"
        f" + VACUUM {statistics.median(vacuums) * 1000:,.1f} ms"
        f" ({statistics.median(deletes) / statistics.median(drops):,.0f}x the drop before"
        " its VACUUM)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
