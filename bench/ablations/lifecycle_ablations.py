"""Ablations of the lifecycle's hot path: one change each, priced against a budget variant.

Not part of ``make bench``; run it alone:
``.venv/bin/python bench/ablations/lifecycle_ablations.py`` (``--only b-checks`` for one,
``--quick`` for a smoke run). Each ablation changes one thing against ``a``, ``b``, ``c`` or
``hb-c`` of ``bench/lifecycle.py``, whose machinery it reuses and whose baselines it measures in
the same rounds; the table's "vs base" column and the lines after it give each one's throughput
change and CPU-bound change. Like the main bench it TRUNCATEs
``todos`` and ``todo_attempts``; ablations that need another schema also drop or add a
constraint, an index or a storage parameter for their measurement and restore it from the
catalog's own definition afterwards, so give it a database of its own. A run killed mid-way
(SIGKILL) leaves that change behind: the next run of this script drops what it added, and stops
with a message if something it dropped is missing (``bench/lifecycle.py`` does not check).

What each prices (the decisions the schema already made are in docs/decisions/):

- ``a+req``: a request boundary before every call, which arms ``CONN_HEALTH_CHECKS``' probe;
- ``b-excl``, ``b-todofk``, ``b-checks``: ``todo_attempts`` without its deferred exclusion
  constraint, its ``todo_id`` foreign key, or its CHECK constraints (PostgreSQL re-reads every
  CHECK from its stored node text once per statement that writes the table);
- ``b+held``, ``c+held``: ``--held`` leases held by another agent, which each claim steps over
  in the claim index;
- ``b-unfolded``: the claim without its ``prior`` arm, the prior attempts read by a second
  statement (``bench/ablations/sql/prior_attempts.sql``);
- ``b-fullidx``: a full claim index instead of the partial one;
- ``b-epidx``: the claim before docs/decisions/0013-claim-per-queue.md, the per-endpoint
  ``todos_claimable_idx`` walked with the queue filtered (``bench/ablations/sql/``), instead of
  the per-queue index read from each requested queue's head;
- ``b+2q``: the claim asked for two queues, the bench's and an empty one: the several-queue
  statement (heads read unlocked, then one locked by id) instead of the one-queue walk;
- ``b+limits``, ``b+limited``: the claim of the same unlimited queue in the full form, with the
  queue-limits probe, lock and spend arm (what every claim paid before
  docs/decisions/0044-claim-unlimited-queue.md), and the claim of a queue with limits set but
  never reached (what a limited one pays: the row locked and written);
- ``b-notify``: ``b`` announcing nothing (``a-notify``, its Django side, is in the main bench:
  the change feed's budget);
- ``a+inline``, ``b+inline``: the claim and the complete announcing as they did before
  docs/decisions/0033-announce-after-commit.md, with ``pg_notify`` in the statement, whose
  queue lock PostgreSQL holds from before the commit until its WAL flush is done;
- ``a+after``: ``a`` announcing from its own connection, a notify-only transaction after each
  statement (``synchronous_commit`` off for it), instead of the process's announcer thread;
- ``b-endedidx``, ``b-feedidx``, ``b-fleetidx``: ``todo_attempts`` without the Overview's
  ``idx_todo_attempts_ended``, the Activity feed's ``idx_todo_attempts_feed`` or the fleet's
  ``idx_todo_attempts_by_endpoint``, each entered by every attempt's ending (the Overview's
  only by those of its four outcomes);
- ``b+trace``, ``b+trace-traceidx``: a trace id on every claim (an agent that sends spans), with
  and without ``idx_todo_attempts_trace`` (``b``'s claims send none, so the partial index skips
  them);
- ``hb-fa``, ``hb-ft``: the heartbeat statement through ``fetch_all`` alone (Django's
  connection, its guards, dict rows; no ``TodoView``, no counters), and with tuple rows: what
  ``lifecycle.heartbeat``'s own Python and the dict rows cost against ``hb-a``;
- ``hb-c+leaseidx``, ``hb-c+ff100``: an index on ``lease_expires_at`` (heartbeats no longer
  HOT), or ``todos`` at fillfactor 100.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# After sys.path: the project's modules come from ROOT; bench.lifecycle sets up Django at import,
# before todos.lifecycle needs it.
import psycopg  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import close_old_connections  # noqa: E402

from bench import lifecycle as core  # noqa: E402
from switchboard.lib import changefeed  # noqa: E402
from switchboard.lib.sql import fetch_all, fetch_tuples, load  # noqa: E402
from switchboard.scope import Scope  # noqa: E402
from todos import lifecycle  # noqa: E402
from todos.lifecycle import core as core_lifecycle  # noqa: E402
from todos.lifecycle.statements import (  # noqa: E402
    AGENT_VIEW_SQL,
    LOCK_QUEUE_LIMITS,
    NOTIFY_CHANGED_SQL,
)
from todos.models import QueueSettings  # noqa: E402

ABLATION_SQL = Path(__file__).resolve().parent / "sql"
Variant = core.Variant


def _rewrite(name: str, sql: str, pattern: str, replacement: str) -> str:
    """``sql`` with the one match of ``pattern`` replaced: a variant derived from the product's
    statement as it stands, so it cannot drift; if the statement changed shape, say so."""
    out, n = re.subn(pattern, replacement, sql)
    if n != 1:
        raise SystemExit(f"ablation {name}: {pattern!r} matched {n} times; update bench/ablations/")
    return out


# The claim without its `prior` arm: the prior attempts come from a second statement once the
# claim has committed.
CLAIM_NEXT_UNFOLDED = _rewrite(
    "b-unfolded",
    lifecycle.CLAIM_NEXT_UNLIMITED,
    r"(?s),\s*prior AS \(.*\Z",
    "\nSELECT upd.*, (SELECT seq FROM opened) AS attempt_seq, '[]'::jsonb AS prior_attempts"
    "\n  FROM upd",
)
PRIOR_ATTEMPTS = load(ABLATION_SQL, "prior_attempts")
# The claim and the complete notifying in their own transaction (todos/sql/_notify.sql's payload
# passed to pg_notify in the statement, as before 0033): the `notified` column is then void,
# so nothing is left for the announcer.
_NOTIFIED = r"(json_build_object\((?:[^()]|\([^()]*\))*\)::text) AS notified"
_INLINE = r"pg_notify('todo_changed', \1) AS notified"
CLAIM_NEXT_INLINE = _rewrite("b+inline", lifecycle.CLAIM_NEXT_UNLIMITED, _NOTIFIED, _INLINE)
COMPLETE_INLINE = _rewrite("b+inline", lifecycle.COMPLETE, _NOTIFIED, _INLINE)
# a+after: the announcements of a statement sent on the caller's own connection, right after it
# (autocommit: a transaction of their own, committed without waiting for its flush).
ANNOUNCE_AFTER = (
    "SELECT set_config('synchronous_commit', 'off', true), pg_notify('todo_changed', p)"
    " FROM unnest(%s::text[]) AS p"
)
# The claim as it was before docs/decisions/0013-claim-per-queue.md: the product's one-queue
# statement with its old `cand` (the product's claim predicate spliced in, so only the candidate
# differs; it reads `queues`, which the bench passes too).
CLAIM_NEXT_PER_ENDPOINT = load(
    core.TODOS_SQL,
    "claim_next",
    claim_next_cand=load(
        ABLATION_SQL, "_cand_per_endpoint", claimable=load(core.TODOS_SQL, "_claimable")
    ),
    activity="",
    activity_bump="",
    prior_attempts=str(lifecycle.PRIOR_ATTEMPTS),
    # The lease cap's spots, as todos/lifecycle/statements.py fills them for a claim.
    run_started="now()",
    run_timeout="COALESCE(t.run_timeout_seconds, @{queue_run_timeout})",
    notify_changed=NOTIFY_CHANGED_SQL,
    # What it returns of the todo, and no limit arms, as b's claim of the bench's unlimited
    # queue (CLAIM_NEXT_UNLIMITED).
    returned=AGENT_VIEW_SQL,
    queue_limited="queue_limited AS (SELECT WHERE false)",
    queue_spend="",
    holds_limited_slot="false",
)
# b+limited's limits: set, so every claim locks and writes the row, but never reached.
LIMITED_MAX_IN_FLIGHT = 1_000
LIMITED_PER_MINUTE = 1_000_000
# The per-endpoint claim index that statement reads, as todos/migrations/0001 created it.
CLAIMABLE_PER_ENDPOINT_IDX = (
    "CREATE INDEX todos_claimable_idx ON todos (endpoint_id, created_at, id)"
    " WHERE state IN ('pending','claimed') OR (state = 'failed' AND next_retry_at IS NOT NULL)"
)


# --- clients ----------------------------------------------------------------------------------


class PerRequestClient(core.DjangoClient):
    """``a`` with a request boundary before each call (what ``request_started`` does), which
    arms the ``CONN_HEALTH_CHECKS`` probe: one ``SELECT 1`` round trip per request."""

    def claim(self) -> str | None:
        close_old_connections()
        return super().claim()

    def complete(self, todo_id: str) -> None:
        close_old_connections()
        super().complete(todo_id)

    def heartbeat(self, todo_id: str) -> None:
        close_old_connections()
        super().heartbeat(todo_id)


class FetchAllHeartbeatClient(core.DjangoClient):
    """``hb-a`` without the lifecycle's Python: the heartbeat statement through ``fetch_all``
    (Django's connection, its guards, dict rows) with its parameters made once, no
    ``TodoView``, no counters: what ``lifecycle.heartbeat`` adds is ``hb-a`` against this."""

    rows: Callable[[str, Any], Any] = staticmethod(fetch_all)

    def __init__(self, target: core.Target, owner: str) -> None:
        super().__init__(target, owner)
        self.params = {
            **core_lifecycle.holder_params(target.endpoint_id, owner, None),
            **core_lifecycle.extend_ttl(core.TTL_SECONDS),
            **Scope.of_endpoint(target.endpoint_id).params,
        }

    def heartbeat(self, todo_id: str) -> None:
        self.rows(lifecycle.HEARTBEAT, {"id": todo_id, **self.params})


class FetchTuplesHeartbeatClient(FetchAllHeartbeatClient):
    """``hb-fa`` with tuple rows (``fetch_tuples``): what the dict rows cost."""

    rows = staticmethod(fetch_tuples)


class TwoQueueClient(core.BareClient):
    """``b`` claiming from two queues, the bench's and one nobody fills."""

    def __init__(self, target: core.Target, owner: str) -> None:
        statements = core.BareStatements(claim=lifecycle.CLAIM_NEXT_QUEUES)
        super().__init__(target, owner, statements, prepare=True)
        self.claim_params["queues"] = [core.QUEUE, f"{core.QUEUE}-empty"]


class LimitedClient(core.BareClient):
    """``b`` on a limited queue, with the product's retry (todos/lifecycle/agent.py): a claim
    that found its count stale runs again in a transaction behind the settings row's lock."""

    def __init__(self, target: core.Target, owner: str) -> None:
        # A limited queue's claim is the full form (todos/lifecycle/agent.py).
        super().__init__(
            target, owner, core.BareStatements(claim=lifecycle.CLAIM_NEXT), prepare=True
        )

    def claim(self) -> str | None:
        got = super().claim()
        if got is None:
            with self.conn.transaction():
                self._execute(LOCK_QUEUE_LIMITS, self.claim_params)
                self.cur.fetchall()
                got = super().claim()
        return got


class TraceClient(core.BareClient):
    """``b`` with a fresh trace id on every claim, as an agent that sends spans passes one:
    its attempt enters the partial ``idx_todo_attempts_trace``, which ``b``'s (NULL) skips."""

    def __init__(self, target: core.Target, owner: str) -> None:
        super().__init__(target, owner, core.BareStatements(), prepare=True)

    def claim(self) -> str | None:
        self.claim_params["trace_id"] = os.urandom(16)
        return super().claim()


class UnfoldedClient(core.BareClient):
    """``b`` with the claim's prior attempts read by a second round trip."""

    def __init__(self, target: core.Target, owner: str) -> None:
        super().__init__(
            target, owner, core.BareStatements(claim=CLAIM_NEXT_UNFOLDED), prepare=True
        )

    def claim(self) -> str | None:
        todo_id = super().claim()
        if todo_id is not None:
            self._execute(PRIOR_ATTEMPTS, {**self.base, "id": todo_id})
            self.cur.fetchone()
        return todo_id


# --- schema changes ---------------------------------------------------------------------------

# Per ablation: the statements that make its schema, and those that restore the migrated one
# (idempotent: they also run at start, after an interrupted run). "@…" lines are Catalog's.
SCHEMAS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "b-excl": (
        ("ALTER TABLE todo_attempts DROP CONSTRAINT todo_attempts_one_open",),
        ("@restore constraint todo_attempts todo_attempts_one_open",),
    ),
    "b-todofk": (
        ("ALTER TABLE todo_attempts DROP CONSTRAINT todo_attempts_todo_id_fkey",),
        ("@restore constraint todo_attempts todo_attempts_todo_id_fkey",),
    ),
    "b-checks": (("@drop checks todo_attempts",), ("@restore checks todo_attempts",)),
    "b-fullidx": (
        (
            "DROP INDEX todos_claim_queue_idx",
            "CREATE INDEX bench_todos_claim_full_idx ON todos (endpoint_id, queue, created_at, id)",
        ),
        ("DROP INDEX IF EXISTS bench_todos_claim_full_idx", "@restore index todos_claim_queue_idx"),
    ),
    "b-epidx": (
        ("DROP INDEX todos_claim_queue_idx", CLAIMABLE_PER_ENDPOINT_IDX),
        ("DROP INDEX IF EXISTS todos_claimable_idx", "@restore index todos_claim_queue_idx"),
    ),
    "b-endedidx": (
        ("DROP INDEX idx_todo_attempts_ended",),
        ("@restore index idx_todo_attempts_ended",),
    ),
    "b-feedidx": (
        ("DROP INDEX idx_todo_attempts_feed",),
        ("@restore index idx_todo_attempts_feed",),
    ),
    "b-fleetidx": (
        ("DROP INDEX idx_todo_attempts_by_endpoint",),
        ("@restore index idx_todo_attempts_by_endpoint",),
    ),
    "b-traceidx": (
        ("DROP INDEX idx_todo_attempts_trace",),
        ("@restore index idx_todo_attempts_trace",),
    ),
    "hb-c+leaseidx": (
        ("CREATE INDEX bench_todos_lease_idx ON todos (lease_expires_at) WHERE state = 'claimed'",),
        ("DROP INDEX IF EXISTS bench_todos_lease_idx",),
    ),
    "hb-c+ff100": (("ALTER TABLE todos SET (fillfactor = 100)",), ("@restore todos reloptions",)),
}

_RECREATE = (
    "a run was interrupted before it could restore the schema; drop and recreate the benchmark"
    " database, then migrate it"
)


class Catalog:
    """Definitions of the schema objects an ablation removes, read before any change.

    Ablations drop a constraint or an index and recreate it from the catalog's own definition,
    so the database ends as migrated. If one is already missing when this starts, it says so
    instead of measuring a different schema.
    """

    CONSTRAINTS = ("todo_attempts_one_open", "todo_attempts_todo_id_fkey")
    INDEXES = (
        "todos_claim_queue_idx",
        "idx_todo_attempts_ended",
        "idx_todo_attempts_feed",
        "idx_todo_attempts_by_endpoint",
        "idx_todo_attempts_trace",
    )

    def __init__(self, admin: psycopg.Connection[Any]) -> None:
        self.admin = admin
        self.defs: dict[str, str] = {}
        for name in self.CONSTRAINTS:
            row = admin.execute(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = %s", [name]
            ).fetchone()
            if row is None:
                raise SystemExit(f"constraint {name} is missing: {_RECREATE}")
            self.defs[name] = row[0]
        for name in self.INDEXES:
            row = admin.execute("SELECT pg_get_indexdef(to_regclass(%s))", [name]).fetchone()
            if row is None or row[0] is None:
                raise SystemExit(f"index {name} is missing: {_RECREATE}")
            self.defs[name] = row[0]
        # todo_attempts' CHECK constraints, by name; a run killed inside b-checks leaves none.
        self.checks = self._attempt_checks()
        if not self.checks:
            raise SystemExit(f"todo_attempts has no CHECK constraint: {_RECREATE}")
        row = admin.execute(
            "SELECT COALESCE(array_to_string(reloptions, ', '), '')"
            " FROM pg_class WHERE oid = 'todos'::regclass"
        ).fetchone()
        assert row is not None
        self.todos_reloptions = row[0]

    def run(self, statements: Sequence[str]) -> None:
        for sql in statements:
            if sql == "@drop checks todo_attempts":
                for name in self.checks:
                    self.admin.execute(f"ALTER TABLE todo_attempts DROP CONSTRAINT {name}")
            elif sql.startswith("@restore "):
                self._restore(sql.split()[1:])
            else:
                self.admin.execute(sql)

    def _restore(self, words: list[str]) -> None:
        kind = words[0]
        if kind == "constraint":
            table, name = words[1], words[2]
            exists = self.admin.execute(
                "SELECT 1 FROM pg_constraint WHERE conname = %s", [name]
            ).fetchone()
            if not exists:
                self.admin.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} {self.defs[name]}")
        elif kind == "index":
            self.admin.execute(
                self.defs[words[1]].replace("CREATE INDEX", "CREATE INDEX IF NOT EXISTS", 1)
            )
        elif kind == "checks":
            present = self._attempt_checks()
            for name, definition in self.checks.items():
                if name not in present:
                    self.admin.execute(
                        f"ALTER TABLE todo_attempts ADD CONSTRAINT {name} {definition}"
                    )
        elif kind == "todos":
            # The migration's storage parameters, exactly as they were before the run.
            self.admin.execute(f"ALTER TABLE todos SET ({self.todos_reloptions})")
        else:
            raise ValueError(f"cannot restore {words}")

    def _attempt_checks(self) -> dict[str, str]:
        rows = self.admin.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = 'todo_attempts'::regclass AND contype = 'c'"
        ).fetchall()
        return dict(rows)

    def restore_all(self) -> None:
        for _, undo in SCHEMAS.values():
            self.run(undo)

    @contextmanager
    def changed(self, key: str) -> Iterator[None]:
        """The schema of ablation ``key`` for the length of one measurement."""
        apply, undo = SCHEMAS[key]
        try:
            self.run(apply)
            yield
        finally:
            self.run(undo)


@contextmanager
def inline_notify() -> Iterator[None]:
    """``todos.lifecycle``'s claim and complete notifying in their own transaction."""
    from todos.lifecycle import agent

    before = agent.CLAIM_NEXT_UNLIMITED, agent.COMPLETE
    agent.CLAIM_NEXT_UNLIMITED, agent.COMPLETE = CLAIM_NEXT_INLINE, COMPLETE_INLINE
    try:
        yield
    finally:
        agent.CLAIM_NEXT_UNLIMITED, agent.COMPLETE = before


@contextmanager
def announce_after() -> Iterator[None]:
    """Announcements sent by the caller's thread on its own connection, for one measurement."""
    before = changefeed.announce
    changefeed.announce = lambda payloads: fetch_all(ANNOUNCE_AFTER, [list(payloads)])
    try:
        yield
    finally:
        changefeed.announce = before


# --- the ablations ----------------------------------------------------------------------------


def ablations(catalog: Catalog, held: int) -> dict[str, Variant]:
    """Every ablation, keyed; ``held`` is how many leases the ``*+held`` ones hold."""

    def hold(target: core.Target) -> None:
        # Long-running work: leases held (not expired) on the oldest todos, in front of every
        # pending one in the claim index.
        core.claim_for_heartbeats(target, "bench-holder", held)

    @contextmanager
    def limited() -> Iterator[None]:
        # The bench's queue limited, far above what the run reaches: each claim locks and
        # writes the settings row (docs/decisions/0028-queue-limits.md). Removed after, so the
        # variants measured next run unlimited again.
        endpoint_id = core.ensure_endpoint()
        lifecycle.set_queue_limits(
            endpoint_id,
            core.QUEUE,
            human_id=None,
            max_in_flight=LIMITED_MAX_IN_FLIGHT,
            claims_per_minute=LIMITED_PER_MINUTE,
        )
        try:
            yield
        finally:
            QueueSettings.objects.filter(endpoint_id=endpoint_id).delete()

    def schema(key: str) -> Callable[[], AbstractContextManager[object]]:
        return lambda: catalog.changed(key)

    bare = core.bare_client(core.LIFECYCLE)
    no_attempts = core.bare_client(core.NO_ATTEMPTS)
    variants = (
        Variant("a+req", "cycle", "a + a request boundary per call", PerRequestClient, "a"),
        Variant(
            "b-excl",
            "cycle",
            "b without the deferred exclusion constraint",
            bare,
            "b",
            schema("b-excl"),
        ),
        Variant(
            "b-todofk",
            "cycle",
            "b without the todo_id FK (no RI check per insert)",
            bare,
            "b",
            schema("b-todofk"),
        ),
        Variant(
            "b-checks",
            "cycle",
            "b without todo_attempts' CHECK constraints",
            bare,
            "b",
            schema("b-checks"),
        ),
        Variant(
            "b+held",
            "cycle",
            "b while another agent holds --held leases",
            bare,
            "b",
            after_seed=hold,
        ),
        Variant(
            "c+held",
            "cycle",
            "c while another agent holds --held leases",
            no_attempts,
            "c",
            after_seed=hold,
        ),
        Variant(
            "b-unfolded",
            "cycle",
            "b with prior attempts read by a second statement",
            UnfoldedClient,
            "b",
        ),
        Variant(
            "b-fullidx",
            "cycle",
            "b with a full (not partial) claim index",
            bare,
            "b",
            schema("b-fullidx"),
        ),
        Variant(
            "b-epidx",
            "cycle",
            "b with the per-endpoint claim walk (before 0013)",
            core.bare_client(core.BareStatements(claim=CLAIM_NEXT_PER_ENDPOINT)),
            "b",
            schema("b-epidx"),
        ),
        Variant(
            "a+inline",
            "cycle",
            "a with pg_notify in its statements (before 0033)",
            core.DjangoClient,
            "a",
            inline_notify,
        ),
        Variant(
            "a+after",
            "cycle",
            "a announcing on its own connection after each statement",
            core.DjangoClient,
            "a",
            announce_after,
        ),
        Variant(
            "b-notify",
            "cycle",
            "b announcing nothing",
            core.bare_client(core.BareStatements(announce=False)),
            "b",
        ),
        Variant(
            "b+inline",
            "cycle",
            "b with pg_notify in its statements (before 0033)",
            core.bare_client(
                core.BareStatements(claim=CLAIM_NEXT_INLINE, complete=COMPLETE_INLINE)
            ),
            "b",
        ),
        Variant(
            "b-endedidx",
            "cycle",
            "b without the Overview's idx_todo_attempts_ended",
            bare,
            "b",
            schema("b-endedidx"),
        ),
        Variant(
            "b-feedidx",
            "cycle",
            "b without the Activity feed's idx_todo_attempts_feed",
            bare,
            "b",
            schema("b-feedidx"),
        ),
        Variant(
            "b-fleetidx",
            "cycle",
            "b without the fleet's idx_todo_attempts_by_endpoint",
            bare,
            "b",
            schema("b-fleetidx"),
        ),
        Variant("b+trace", "cycle", "b with a trace id on every claim", TraceClient, "b"),
        Variant(
            "b+trace-traceidx",
            "cycle",
            "b+trace without idx_todo_attempts_trace",
            TraceClient,
            "b",
            schema("b-traceidx"),
        ),
        Variant("b+2q", "cycle", "b claiming from two queues (one empty)", TwoQueueClient, "b"),
        Variant(
            "b+limits",
            "cycle",
            "b in the full form: the queue-limits probe, lock and spend (before 0044)",
            core.bare_client(core.BareStatements(claim=lifecycle.CLAIM_NEXT)),
            "b",
        ),
        Variant(
            "b+limited",
            "cycle",
            "b on a queue with limits set (never reached)",
            LimitedClient,
            "b",
            limited,
        ),
        Variant(
            "hb-fa",
            "heartbeat",
            "the heartbeat statement through fetch_all, no lifecycle Python",
            FetchAllHeartbeatClient,
            "hb-a",
        ),
        Variant(
            "hb-ft",
            "heartbeat",
            "hb-fa with tuple rows (fetch_tuples)",
            FetchTuplesHeartbeatClient,
            "hb-fa",
        ),
        Variant(
            "hb-c+leaseidx",
            "heartbeat",
            "hb-c + index on lease_expires_at (not HOT)",
            no_attempts,
            "hb-c",
            schema("hb-c+leaseidx"),
        ),
        Variant(
            "hb-c+ff100",
            "heartbeat",
            "hb-c with todos fillfactor 100",
            no_attempts,
            "hb-c",
            schema("hb-c+ff100"),
        ),
    )
    return {v.key: v for v in variants}


def print_changes(
    samples: Sequence[core.Sample], variants: Sequence[Variant], threads: Sequence[int]
) -> None:
    """Each ablation against its base: throughput and CPU-bound change, per thread count."""
    print()
    print("ablations against their base: throughput change (CPU-bound change)")
    for v in variants:
        if v.key in core.BY_KEY or v.baseline is None:
            continue
        cells = []
        for n in threads:
            ratio = core.paired_ratio(samples, v.key, v.baseline, n)
            cpu_v, cpu_b = (
                core.cpu_per_op(samples, v.key, n),
                core.cpu_per_op(samples, v.baseline, n),
            )
            cpu = "" if not (cpu_v and cpu_b) else f" ({(cpu_b / cpu_v - 1) * 100:+.1f} %)"
            cells.append(
                f"{n} thr: -" if ratio is None else f"{n} thr: {(ratio - 1) * 100:+.1f} %{cpu}"
            )
        print(f"  {v.key:<14}vs {v.baseline:<6}{'  '.join(cells)}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = core.argument_parser(__doc__.split("\n")[0] if __doc__ else "")
    parser.add_argument(
        "--held", type=int, default=500, help="leases held by another agent in *+held (500)"
    )
    args = core.finish_args(parser.parse_args(argv))
    core.embedded.ensure_running()  # DATABASE_URL unset: settings only describe the server
    url = str(settings.DATABASE_URL)
    with psycopg.connect(url, autocommit=True, application_name="switchboard-bench") as admin:
        catalog = Catalog(admin)
        catalog.restore_all()  # drop what an interrupted run may have added
        known = ablations(catalog, args.held)
        # --only may name the main bench's variants too; by default, every ablation.
        chosen = core.select(args, {**core.BY_KEY, **known}) if args.only else [*known.values()]
        # Each ablation's base runs in the same rounds, so every ratio is a paired one.
        keys = [v.key for v in chosen]
        bases = [b for b in dict.fromkeys(v.baseline for v in chosen) if b and b not in keys]
        variants = [*(core.BY_KEY[b] for b in bases), *chosen]
        try:
            samples = core.run(variants, args)
        finally:
            catalog.restore_all()
    print_changes(samples, variants, args.threads)
    core.print_ratios(samples, args.threads)  # those whose two variants ran (a-notify's)
    return 0


if __name__ == "__main__":
    sys.exit(main())
