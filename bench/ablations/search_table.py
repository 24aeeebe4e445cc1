"""The Board search's text on ``todos`` or in a table of its own: what intake and the lifecycle pay.

Not part of ``make bench``; run it alone: ``.venv/bin/python bench/ablations/search_table.py``
(``--quick`` for a smoke run). It prices docs/decisions/0019-todo-search.md's move, in
alternating rounds on one database:

- ``expr``: the schema of ``todos/migrations/0013_todo_search.py``, the trigram index
  ``todos_search_idx`` over ``todo_search_text(id, title, payload)`` on ``todos``, and the
  create statement without its ``search`` arm;
- ``table``: the product's (migrations/0014): the text written once into ``todo_search`` by
  ``todos/sql/create.sql``, nothing on ``todos``.

Each round empties ``todos`` (TRUNCATE … CASCADE), creates ``--todos`` todos through
``todos.lifecycle.create`` with a 3 KB GitHub-style payload (whose text reaches the 1,000
character cut), vacuums, then runs as many claim_next + complete cycles through the lifecycle,
one thread; it prints the median time per create and per cycle of each variant and the
difference. Like the other benchmarks it TRUNCATEs ``todos``, so give it a database of its own.
It leaves the product's schema behind (``todos_search_idx`` dropped), even after an error.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# After sys.path: bench.lifecycle sets up Django at import, before todos.lifecycle needs it.
from django.db import connection  # noqa: E402

from bench import lifecycle as core  # noqa: E402
from bench.ablations.lifecycle_ablations import _rewrite  # noqa: E402
from todos import lifecycle  # noqa: E402

EXPR_INDEX = (
    "CREATE INDEX IF NOT EXISTS todos_search_idx ON todos"
    " USING gin (todo_search_text(id, title, payload) gin_trgm_ops)"
)
CREATE_WITHOUT_SEARCH = _rewrite("expr", lifecycle.CREATE, r"(?s),\s*search AS \(.*?\n\)\n", "\n")
OWNER = "bench-search"
_PRODUCT_CREATE = lifecycle.CREATE


def payload(i: int) -> dict[str, object]:
    """About 3.2 KB of JSON, a check-run webhook's shape: strings at several depths."""
    return {
        "action": "completed",
        "check_run": {
            "name": f"test (3.12) shard {i % 8}",
            "head_sha": f"{i:040x}",
            "status": "completed",
            "conclusion": "failure",
            "html_url": f"https://github.example/example/shop/runs/{1_000_000 + i}",
            "output": {
                "title": f"{i % 17} tests failed",
                "summary": "FAILED tests/test_checkout.py::test_redirect_loop - "
                + "AssertionError: expected 302, got 200. " * 12,
                "text": "Traceback (most recent call last): " + "frame in checkout.py; " * 40,
            },
        },
        "repository": {
            "full_name": "example/shop",
            "description": "The shop front, its checkout and the order pipeline. " * 6,
        },
        "sender": {"login": f"dev-{i % 31}", "type": "User"},
        "branch": f"feature/checkout-{i}",
    }


@contextmanager
def product_schema_after() -> Iterator[None]:
    try:
        yield
    finally:
        use("table")


def use(variant: str) -> None:
    """Put the schema and the create statement of ``variant`` in place."""
    with connection.cursor() as cur:
        if variant == "expr":
            cur.execute(EXPR_INDEX)
            lifecycle.agent.CREATE = CREATE_WITHOUT_SEARCH  # what create() runs
        else:
            cur.execute("DROP INDEX IF EXISTS todos_search_idx")
            lifecycle.agent.CREATE = _PRODUCT_CREATE


def _backend_cpu() -> float:
    """CPU seconds the server process of Django's connection has used (0 when not local)."""
    connection.ensure_connection()
    raw = connection.connection
    assert raw is not None
    return core._cpu_seconds(int(raw.info.backend_pid)) or 0.0


Figures = tuple[float, float, float, float]  # per create, per cycle: wall s, server CPU s


def one_round(variant: str, endpoint_id: object, n: int) -> Figures:
    """Per create and per claim_next + complete cycle, wall and server CPU seconds."""
    with connection.cursor() as cur:
        cur.execute("TRUNCATE todos CASCADE")
    use(variant)
    payloads = [payload(i) for i in range(n)]
    cpu, start = _backend_cpu(), time.perf_counter()
    for i, body in enumerate(payloads):
        lifecycle.create(endpoint_id, queue=core.QUEUE, title=f"check run {i}", payload=body)  # type: ignore[arg-type]
    created, created_cpu = time.perf_counter() - start, _backend_cpu() - cpu
    with connection.cursor() as cur:
        cur.execute("VACUUM (ANALYZE) todos, todo_attempts, todo_search")
    cpu, start = _backend_cpu(), time.perf_counter()
    cycles = 0
    while True:
        claim = lifecycle.claim_next(endpoint_id, [core.QUEUE], owner=OWNER)  # type: ignore[arg-type]
        if claim is None:
            break
        lifecycle.complete(endpoint_id, claim.todo.id, owner=OWNER, result=core.RESULT)  # type: ignore[arg-type]
        cycles += 1
    assert cycles == n, (cycles, n)
    cycled, cycled_cpu = time.perf_counter() - start, _backend_cpu() - cpu
    return created / n, created_cpu / n, cycled / n, cycled_cpu / n


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("--todos", type=int, default=2_000, help="todos per round (2000)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per variant (6)")
    parser.add_argument("--quick", action="store_true", help="smoke run: 200 todos, 1 round")
    args = parser.parse_args(argv)
    if args.quick:
        args.todos, args.rounds = 200, 1
    endpoint_id = core.ensure_endpoint()
    results: dict[str, list[Figures]] = {"expr": [], "table": []}
    with product_schema_after():
        for r in range(args.rounds):
            order = ("expr", "table") if r % 2 == 0 else ("table", "expr")
            for variant in order:
                figures = one_round(variant, endpoint_id, args.todos)
                results[variant].append(figures)
                print(f"round {r + 1} {variant:5} {_line(figures)}", flush=True)
    medians = {variant: _medians(rs) for variant, rs in results.items()}
    print(f"\n{args.todos} todos a round, {args.rounds} rounds a variant, medians:")
    for variant, figures in medians.items():
        print(f"  {variant:5} {_line(figures)}")
    table, expr = medians["table"], medians["expr"]
    delta = (table[0] - expr[0], table[1] - expr[1], table[2] - expr[2], table[3] - expr[3])
    print(f"  table - expr: {_line(delta)}")
    return 0


def _medians(rounds: Sequence[Figures]) -> Figures:
    m = [statistics.median(f[k] for f in rounds) for k in range(4)]
    return m[0], m[1], m[2], m[3]


def _line(f: Figures) -> str:
    ms = [x * 1000 for x in f]
    return (
        f"create {ms[0]:+.3f} ms (server CPU {ms[1]:+.3f})"
        f"  claim_next + complete {ms[2]:+.3f} ms (server CPU {ms[3]:+.3f})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
