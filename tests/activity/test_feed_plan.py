"""The Activity feed's query plan: for each of the human's endpoints, both arms walk their
``(endpoint_id, at)`` index newest first from the cursor and stop, on a shared table where the
human owns a small share of the rows.

``activity/sql/feed.sql`` says "Uses index: … per endpoint, idx_todo_attempts_feed and
idx_todo_activity_feed, each walked newest first from the cursor … stopped after `size` rows".
These tests hold it to that: no sequential scan of either table, every read of them by the
human's endpoint (no other owner's row is read: a human with no entries reads none), no Sort
over rows that no LIMIT bounds, and a page reads about a page of rows per arm however much
history the human and everyone else have. The statements explained are the ones ``feed_page``
and ``unread_count`` run, captured as they run, and their generic plans (psycopg prepares a
statement after its fifth run, and PostgreSQL may then keep one plan for every human).

The rows are committed (a transactional test) and truncated after, as in
tests/board/test_list_plan.py, so the plans later tests explain are not skewed by dead rows.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from activity import feed
from activity.feed import FeedFilters, feed_page
from switchboard.models import Endpoint, Human
from tests.base import Personas
from tests.plans import generic_plan, plan_nodes

pytestmark = pytest.mark.django_db(transaction=True)

OWNERS = 6  # alice, bob and four others, one endpoint each: alice has a sixth of the rows
TODOS = 12_000
ROWS_PER_TODO = 8  # activity rows, a ring among them; and two attempt endings per todo
TABLES = ("todo_activity", "todo_attempts")
INDEXES = {"todo_activity": "idx_todo_activity_feed", "todo_attempts": "idx_todo_attempts_feed"}

SEED = """
WITH todo AS (
    INSERT INTO todos (id, endpoint_id, queue, title, state, attempt, attempts_total,
                       activity_seq, created_at, updated_at, finished_at)
    SELECT 'td_' || translate(substr(md5(g::text), 1, 20), '0189', 'wxyz'),
           (%(endpoints)s::uuid[])[1 + g %% %(owners)s], 'work', 'todo ' || g, 'completed', 2,
           2, %(rows)s, now() - (%(n)s - g) * interval '1 minute', now(),
           now() - (%(n)s - g) * interval '1 minute' + interval '50 seconds'
      FROM generate_series(1, %(n)s) AS g
    RETURNING id, endpoint_id, created_at
), ended AS (
    INSERT INTO todo_attempts (todo_id, endpoint_id, seq, attempt, claimer_kind,
                               claimer_endpoint_id, owner, claimed_at, lease_expires_at, ended_at,
                               outcome, disposition)
    SELECT id, endpoint_id, s, s, 'endpoint', endpoint_id, 'agent',
           created_at + s * interval '10 seconds',
           created_at + interval '5 minutes', created_at + s * interval '20 seconds',
           CASE s WHEN 1 THEN 'failed' ELSE 'completed' END,
           CASE s WHEN 1 THEN 'retry_scheduled' ELSE 'done' END
      FROM todo CROSS JOIN generate_series(1, 2) AS s
)
INSERT INTO todo_activity (todo_id, endpoint_id, seq, attempt_seq, at, kind, actor_kind, actor_ref,
                           message)
SELECT id, endpoint_id, k, 1 + k / 5, created_at + k * interval '5 seconds',
       CASE k WHEN 1 THEN 'rung' ELSE 'note' END, CASE k WHEN 1 THEN 'system' ELSE 'endpoint' END,
       CASE k WHEN 1 THEN 'doorbell' ELSE 'agent' END, 'note ' || k
  FROM todo CROSS JOIN generate_series(1, %(rows)s) AS k
"""


@pytest.fixture
def shared_tables(personas: Personas) -> Iterator[Personas]:
    """TODOS todos spread evenly over the owners' endpoints, a minute apart, each with its
    attempt endings and activity rows interleaved in time with everyone else's; then fresh
    statistics. Afterwards: empty tables with the statistics of empty tables."""
    owners = Human.objects.bulk_create(
        Human(username=f"owner-{n}", password="!") for n in range(OWNERS - 2)
    )
    Endpoint.objects.bulk_create(
        Endpoint(owner=owner, slug=f"other-{n}", name=f"Other {n}", verbs=[])
        for n, owner in enumerate(owners)
    )
    endpoint_ids = list(Endpoint.objects.order_by("slug").values_list("id", flat=True))
    assert len(endpoint_ids) == OWNERS
    with connection.cursor() as cur:
        cur.execute(
            SEED,
            {"endpoints": endpoint_ids, "owners": OWNERS, "n": TODOS, "rows": ROWS_PER_TODO},
        )
        for table in ("todos", *TABLES, "endpoints"):
            cur.execute(f"ANALYZE {table}")
    yield personas
    with connection.cursor() as cur:
        cur.execute("TRUNCATE todos CASCADE")
        for table in ("todos", *TABLES):
            cur.execute(f"ANALYZE {table}")


def _captured(call: Any) -> tuple[str, Any]:
    with CaptureQueriesContext(connection) as captured:
        result = call()
    assert len(captured.captured_queries) == 1
    return captured.captured_queries[0]["sql"], result


def _plan(sql: str, *, analyze: bool = False) -> dict[str, Any]:
    options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
    with connection.cursor() as cur:
        cur.execute(f"EXPLAIN ({options}) {sql}")
        row = cur.fetchone()
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


def _reads(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes that read todo_activity or todo_attempts."""
    return [node for node in plan_nodes(plan) if node.get("Relation Name") in TABLES]


def _unlimited_reads(node: dict[str, Any]) -> list[dict[str, Any]]:
    """Reads of the two tables below ``node`` that no Limit node stands between."""
    found = []
    for child in node.get("Plans", []):
        if child["Node Type"] == "Limit":
            continue
        if child.get("Relation Name") in TABLES:
            found.append(child)
        found += _unlimited_reads(child)
    return found


def _unbounded_sorts(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Sort nodes over reads of the two tables that no Limit bounds: a sort of every row the
    scans find, rather than of a page. (An Incremental Sort sorts one instant's ties.)"""
    return [n for n in plan_nodes(plan) if n["Node Type"] == "Sort" and _unlimited_reads(n)]


def _check_walks_in_order(plan: dict[str, Any]) -> None:
    """Each table read once, through its feed index, by the endpoint an outer row names (the
    human's, one at a time), newest first, under a Limit; no Sort of unbounded rows."""
    reads = _reads(plan)
    assert not [node for node in reads if node["Node Type"] == "Seq Scan"], reads
    assert sorted(node.get("Index Name", "") for node in reads) == sorted(INDEXES.values())
    for node in reads:
        assert node["Node Type"] in ("Index Scan", "Index Only Scan"), node
        assert node["Index Name"] == INDEXES[node["Relation Name"]], node
        # By the endpoint alone: never a walk of every owner's rows filtered afterwards.
        assert re.match(r"\(+endpoint_id = e(_\d+)?\.id\)", node["Index Cond"]), node
        assert node["Scan Direction"] == "Forward"  # the indexes are (…, at DESC): newest first
    assert _unlimited_reads(plan) == [], "a read of the tables no Limit stops"
    assert _unbounded_sorts(plan) == []


def _walked(plan: dict[str, Any]) -> int:
    """Rows of the two tables the executed plan read, those its filters dropped included."""
    return sum(
        (node["Actual Rows"] + node.get("Rows Removed by Filter", 0)) * node["Actual Loops"]
        for node in _reads(plan)
    )


@pytest.mark.parametrize(
    "filters",
    [FeedFilters(), FeedFilters(queue="work"), FeedFilters(endpoint="agent-a")],
    ids=["unfiltered", "queue", "endpoint"],
)
def test_every_page_walks_both_at_indexes_newest_first(
    shared_tables: Personas, filters: FeedFilters
) -> None:
    alice = shared_tables.alice.id
    first_sql, first = _captured(lambda: feed_page(alice, filters))
    assert len(first.entries) == feed.PAGE_SIZE and first.next_cursor is not None
    next_sql, _ = _captured(lambda: feed_page(alice, filters, first.next_cursor))

    for sql in (first_sql, next_sql):
        _check_walks_in_order(_plan(sql))


def test_a_page_reads_about_a_page_of_the_humans_own_rows_however_long_the_history(
    shared_tables: Personas,
) -> None:
    alice = shared_tables.alice.id
    mine = TODOS // OWNERS * (ROWS_PER_TODO - 1 + 2)  # alice's entries in the feed
    # Each arm walks alice's one endpoint until it has a page (the page plus one) and the row
    # that ends its last instant, with slack for the cursor's instant: no other owner's row.
    budget = 2 * (feed.PAGE_SIZE + 1 + 3)
    assert budget * 50 < mine
    after = None
    for _ in range(3):
        sql, page = _captured(lambda after=after: feed_page(alice, after=after))
        plan = _plan(sql, analyze=True)  # executed inside the test's transaction

        walked = _walked(plan)
        assert len(page.entries) == feed.PAGE_SIZE
        assert walked <= budget, f"read {walked} rows for a page of {feed.PAGE_SIZE}"
        after = page.next_cursor


def test_a_human_with_no_entries_reads_no_row_of_anyone_elses(shared_tables: Personas) -> None:
    """The feed's worst case when it walked time: a human with an endpoint and nothing on it,
    among busy owners, walked every row of both tables for an empty page. Now their page and
    their count read none."""
    carol = Human.objects.create(username="carol", password="!")
    Endpoint.objects.create(owner=carol, slug="agent-c", name="Carol's agent", verbs=[])

    sql, page = _captured(lambda: feed_page(carol.id))
    plan = _plan(sql, analyze=True)
    assert page.entries == [] and page.next_cursor is None
    _check_walks_in_order(plan)
    assert _walked(plan) == 0

    since = dt.datetime.now(dt.UTC) - dt.timedelta(days=365)
    sql, count = _captured(lambda: feed.unread_count(carol.id, since))
    assert count == 0
    assert _walked(_plan(sql, analyze=True)) == 0


def test_the_unread_count_walks_the_same_indexes(shared_tables: Personas) -> None:
    alice = shared_tables.alice.id
    since = dt.datetime.now(dt.UTC) - dt.timedelta(days=365)
    sql, count = _captured(lambda: feed.unread_count(alice, since))

    assert count == feed.UNREAD_CAP
    _check_walks_in_order(_plan(sql))


def test_a_team_members_feed_walks_the_same_indexes_and_reads_the_membership_once(
    shared_tables: Personas,
) -> None:
    """Alice also sees bob's endpoint through a team: her feed's pages walk both ``at``
    indexes newest first as before, her memberships read once (never per row walked), and bob's
    rows are hers now."""
    from switchboard import credentials, teams

    team = teams.create_team("ops", shared_tables.bob)
    teams.add_member(team, shared_tables.alice)
    credentials.move_endpoint(shared_tables.endpoint_b, team, by=None)
    alice = shared_tables.alice.id
    sql, page = _captured(lambda: feed_page(alice))
    plan = _plan(sql, analyze=True)

    _check_walks_in_order(plan)
    memberships = [n for n in plan_nodes(plan) if n.get("Relation Name") == "team_members"]
    assert memberships and all(n["Actual Loops"] == 1 for n in memberships), plan
    assert {e.endpoint_slug for e in page.entries} == {"agent-a", "agent-b"}


# The feed's parameters, with their types, for its generic plan.
TYPES = {
    "scope_human_id": "bigint",
    "size": "int",
    "endpoint": "text",
    "queue": "text",
    "kind": "text",
    "outcome": "text",
    "after_at": "timestamptz",
    "after_kind": "text",
    "after_todo_id": "text",
    "after_seq": "bigint",
    "since": "timestamptz",
}


def _generic_plan(sql: str, values: dict[str, Any]) -> dict[str, Any]:
    return generic_plan(sql, values, TYPES)


@pytest.mark.parametrize(
    "filters",
    [
        FeedFilters(),
        FeedFilters(queue="work"),
        FeedFilters(endpoint="agent-a"),
        FeedFilters(kind="note"),
        FeedFilters(outcome="failed"),
    ],
    ids=["unfiltered", "queue", "endpoint", "kind", "outcome"],
)
@pytest.mark.parametrize("after", [False, True], ids=["first", "later"])
def test_the_kept_generic_plan_walks_the_humans_endpoints_too(
    shared_tables: Personas, filters: FeedFilters, after: bool
) -> None:
    """Prepared, the statement is planned once for every human and cursor: that plan too reads
    each table through its feed index by the human's endpoint, under a Limit."""
    sql = feed.statement(feed._Variant.of(filters, after=after))
    values = {
        "scope_human_id": shared_tables.alice.id,
        "size": feed.PAGE_SIZE + 1,
        "endpoint": filters.endpoint,
        "queue": filters.queue,
        "kind": filters.kind,
        "outcome": filters.outcome,
        "after_at": dt.datetime.now(dt.UTC),
        "after_kind": "note",
        "after_todo_id": "td_aaaaaaaaaaaaaaaaaaaa",
        "after_seq": 1,
    }
    plan = _generic_plan(sql, values)

    reads = _reads(plan)
    arms = {"todo_attempts": filters.attempt_arm, "todo_activity": filters.activity_arm}
    assert {n["Relation Name"] for n in reads} == {table for table, on in arms.items() if on}
    for node in reads:
        assert node["Node Type"] in ("Index Scan", "Index Only Scan"), node
        assert node["Index Name"] == INDEXES[node["Relation Name"]], node
        assert re.match(r"\(+endpoint_id = e(_\d+)?\.id\)", node["Index Cond"]), node
    assert _unlimited_reads(plan) == []
    assert _unbounded_sorts(plan) == []


def test_the_unread_counts_kept_generic_plan_walks_the_humans_endpoints_too(
    shared_tables: Personas,
) -> None:
    plan = _generic_plan(
        feed.UNREAD,
        {
            "scope_human_id": shared_tables.alice.id,
            "size": feed.UNREAD_CAP,
            "since": dt.datetime.now(dt.UTC) - dt.timedelta(days=1),
        },
    )

    _check_walks_in_order(plan)
