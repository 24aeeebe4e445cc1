"""The todo list's query plan: both scopes read todos_board_idx, about a page at a time.

``todos.queries.todo_page`` says "Uses index: todos_board_idx". These tests hold it to that on a
shared table where the human owns a small share of the todos (the case the index exists for: on a
table mostly the human's own, a sequential scan is the right plan and PostgreSQL takes it), for
the Board (a human's scope) and for MCP's list_todos (an endpoint's scope, one of the human's
endpoints). The statement explained is the one ``todo_page`` runs, captured as it runs.

The rows are committed (a transactional test) and truncated after: thirty thousand inserts rolled
back would stay in the table's files as dead rows until a vacuum, and change the plans that later
tests in the session explain.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from switchboard.models import Endpoint, Human
from switchboard.scope import Scope
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.plans import plan_nodes
from todos import queries
from todos.models import Todo

pytestmark = pytest.mark.django_db(transaction=True)

TODOS = 30_000
OTHER_OWNERS = 150  # one endpoint each; alice has two of the 153 endpoints (about 1.3 %)
UNFILTERED = queries.TodoFilters()


@pytest.fixture
def shared_table(personas: Personas) -> Iterator[Personas]:
    """TODOS pending todos spread evenly over alice's two endpoints, bob's and 150 others',
    one second apart, newest last, each with a payload naming its run and its commit, and its
    search text; then fresh statistics. (Payloads as uniform as ``run-N`` alone give the trigram
    index few distinct trigrams, each in most rows, and PostgreSQL then reckons a scan of the
    short search texts cheaper; a commit sha is in real payloads.)
    Afterwards: an empty todos table with the statistics of an empty table, as the next test
    expects to find it."""
    EndpointFactory(owner=personas.alice, slug="agent-a2")
    owners = Human.objects.bulk_create(
        Human(username=f"owner-{n}", password="!") for n in range(OTHER_OWNERS)
    )
    Endpoint.objects.bulk_create(
        Endpoint(owner=owner, slug=f"other-{n}", name=f"Other {n}", verbs=[])
        for n, owner in enumerate(owners)
    )
    endpoint_ids = list(Endpoint.objects.order_by("slug").values_list("id", flat=True))
    with connection.cursor() as cur:
        # One statement for the bulk. Ids: td_ + 20 characters of [a-z2-7] (the CHECK), from md5
        # hex with its digits outside 2-7 mapped to letters outside a-f.
        cur.execute(
            """INSERT INTO todos (id, endpoint_id, queue, title, payload, created_at, updated_at)
               SELECT 'td_' || translate(substr(md5(g::text), 1, 20), '0189', 'wxyz'),
                      (%(endpoints)s::uuid[])[1 + g %% %(n_endpoints)s], 'work', 'backlog ' || g,
                      jsonb_build_object('check', jsonb_build_object('run', 'run-' || g || 'x'),
                                         'head_sha', md5('sha' || g)),
                      now() - (%(n)s - g) * interval '1 second', now()
                 FROM generate_series(1, %(n)s) AS g""",
            {"endpoints": endpoint_ids, "n_endpoints": len(endpoint_ids), "n": TODOS},
        )
        # Each todo's search text, as todos/sql/create.sql writes it.
        cur.execute(
            "INSERT INTO todo_search (todo_id, text)"
            " SELECT id, todo_search_text(id, title, payload) FROM todos"
        )
        cur.execute("ANALYZE todos")
        # As autovacuum leaves it: the GIN index's pending list merged and its statistics
        # counted (PostgreSQL's estimate of an index read rests on them).
        cur.execute("VACUUM (ANALYZE) todo_search")
        cur.execute("ANALYZE endpoints")
    yield personas
    with connection.cursor() as cur:
        cur.execute("TRUNCATE todos CASCADE")
        cur.execute("ANALYZE todos")
        cur.execute("ANALYZE todo_search")


def _page_sql(
    scope: Scope,
    after: queries.Cursor | None = None,
    filters: queries.TodoFilters = UNFILTERED,
) -> tuple[str, queries.TodoPage]:
    """The statement todo_page runs for ``filters``, with its parameters bound."""
    with CaptureQueriesContext(connection) as captured:
        page = queries.todo_page(scope, filters, after)
    assert len(captured.captured_queries) == 1
    return captured.captured_queries[0]["sql"], page


def _plan(sql: str, *, analyze: bool = False) -> dict[str, Any]:
    options = "ANALYZE, FORMAT JSON" if analyze else "FORMAT JSON"
    with connection.cursor() as cur:
        cur.execute(f"EXPLAIN ({options}) {sql}")
        row = cur.fetchone()
    assert row is not None
    plan: dict[str, Any] = row[0][0]["Plan"]
    return plan


def _todos_reads(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes that read the todos table or one of its indexes."""
    return [
        node
        for node in plan_nodes(plan)
        if node.get("Relation Name") == "todos" or node.get("Index Name", "").startswith("todos_")
    ]


def test_the_human_scope_list_reads_todos_board_idx_on_every_page(shared_table: Personas) -> None:
    alice = Scope.of_human(shared_table.alice.id)
    first_sql, first = _page_sql(alice)
    assert len(first.todos) == queries.PAGE_SIZE and first.next_cursor is not None
    next_sql, _ = _page_sql(alice, first.next_cursor)

    for sql in (first_sql, next_sql):
        reads = _todos_reads(_plan(sql))
        assert not [node for node in reads if node["Node Type"] == "Seq Scan"], reads
        scans = [node for node in reads if "Index Name" in node]
        assert [node["Index Name"] for node in scans] == ["todos_board_idx"], reads
        assert "endpoint_id" in scans[0]["Index Cond"], scans


def test_every_page_reads_about_a_page_of_todos_per_endpoint(shared_table: Personas) -> None:
    alice = Scope.of_human(shared_table.alice.id)
    budget = Endpoint.objects.filter(owner=shared_table.alice).count() * (queries.PAGE_SIZE + 1)
    after = None
    for _ in range(3):
        sql, page = _page_sql(alice, after)
        plan = _plan(sql, analyze=True)  # executed inside the test's transaction

        fetched = max(node["Actual Rows"] * node["Actual Loops"] for node in _todos_reads(plan))
        assert len(page.todos) == queries.PAGE_SIZE
        assert fetched <= budget, f"read {fetched} rows of todos for one page of {len(page.todos)}"
        after = page.next_cursor


def test_pages_follow_each_other_without_gaps_or_repeats(shared_table: Personas) -> None:
    alice = shared_table.alice
    expected = list(
        Todo.objects.filter(endpoint__owner=alice)
        .order_by("-created_at", "-id")
        .values_list("id", flat=True)[:200]
    )
    seen: list[str] = []
    after = None
    while len(seen) < 200:
        page = queries.todo_page(Scope.of_human(alice.id), queries.TodoFilters(), after)
        seen += [todo.id for todo in page.todos]
        assert all(todo.endpoint.owner_id == alice.id for todo in page.todos)
        after = page.next_cursor
    assert seen[:200] == expected


@pytest.mark.parametrize(
    "filters",
    [
        queries.TodoFilters(),
        queries.TodoFilters(queue="work"),
        queries.TodoFilters(state="pending"),
    ],
    ids=["unfiltered", "queue", "state"],
)
def test_the_endpoint_scope_list_is_one_bounded_index_scan_on_every_page(
    shared_table: Personas, filters: queries.TodoFilters
) -> None:
    # Every todo here is pending, so with a state filter either board index serves as well.
    indexes = {"todos_board_idx", "todos_board_state_idx"} if filters.state else {"todos_board_idx"}
    agent_a = Scope.of_endpoint(shared_table.endpoint_a.id)
    after = None
    for _ in range(3):
        sql, page = _page_sql(agent_a, after, filters)
        plan = _plan(sql, analyze=True)

        reads = _todos_reads(plan)
        assert not [node for node in reads if node["Node Type"] == "Seq Scan"], reads
        scans = [node for node in reads if "Index Name" in node]
        assert len(scans) == 1 and scans[0]["Index Name"] in indexes, reads
        assert "endpoint_id" in scans[0]["Index Cond"], scans
        if after is not None:  # the cursor bounds the scan rather than filtering its rows
            assert "created_at" in scans[0]["Index Cond"], scans
        scanned = scans[0]["Actual Rows"] + scans[0].get("Rows Removed by Filter", 0)
        assert len(page.todos) == queries.PAGE_SIZE
        assert scanned <= queries.PAGE_SIZE + 1, f"read {scanned} index entries for a page"
        assert {todo.endpoint_id for todo in page.todos} == {shared_table.endpoint_a.id}
        after = page.next_cursor


def _alices_nth(personas: Personas, n: int) -> Todo:
    """One of alice's todos, well inside the table."""
    return (
        Todo.objects.filter(endpoint__owner=personas.alice)
        .order_by("created_at", "id")
        .defer("payload")[n]
    )


def _search_reads(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The nodes that read the todo_search table or one of its indexes."""
    return [
        node
        for node in plan_nodes(plan)
        if node.get("Relation Name") == "todo_search"
        or node.get("Index Name", "").startswith("todo_search")
    ]


def test_a_search_reads_todo_search_text_idx_then_its_todos_by_key(
    shared_table: Personas,
) -> None:
    alice = Scope.of_human(shared_table.alice.id)
    todo = _alices_nth(shared_table, 100)
    number = todo.title.removeprefix("backlog ")

    for filters in (
        queries.TodoFilters(q=f"run-{number}x"),  # a string deep in the payload
        queries.TodoFilters(q=f"backlog {number}", sort="title"),  # the title, sorted
        queries.TodoFilters(q=f"run-{number}x", queue_prefix="wo", state="pending"),
    ):
        sql, page = _page_sql(alice, filters=filters)
        plan = _plan(sql, analyze=True)

        assert [t.id for t in page.todos] == [todo.id], filters
        searched = _search_reads(plan)
        assert not [node for node in searched if node["Node Type"] == "Seq Scan"], searched
        scans = [node for node in searched if "Index Name" in node]
        assert [node["Index Name"] for node in scans] == ["todo_search_text_idx"], searched
        # The index narrows the candidates to a handful; the recheck reads only those rows.
        heap = [node for node in searched if node["Node Type"] == "Bitmap Heap Scan"]
        assert (
            heap and heap[0]["Actual Rows"] + heap[0].get("Rows Removed by Index Recheck", 0) < 20
        )
        # The matches' todos are read by their key, and only theirs.
        reads = _todos_reads(plan)
        assert not [node for node in reads if node["Node Type"] == "Seq Scan"], reads
        keyed = [node for node in reads if "Index Name" in node]
        assert [node["Index Name"] for node in keyed] == ["todos_pkey"], reads
        assert keyed[0]["Actual Rows"] * keyed[0]["Actual Loops"] < 20, keyed


def test_a_search_for_a_todo_id_reads_the_primary_key(shared_table: Personas) -> None:
    alice = Scope.of_human(shared_table.alice.id)
    todo = _alices_nth(shared_table, 7)
    bobs = Todo.objects.filter(endpoint=shared_table.endpoint_b).defer("payload").first()
    assert bobs is not None

    sql, page = _page_sql(alice, filters=queries.TodoFilters(q=todo.id))
    assert [t.id for t in page.todos] == [todo.id]
    _, foreign = _page_sql(alice, filters=queries.TodoFilters(q=bobs.id))
    assert foreign.todos == []

    reads = _todos_reads(_plan(sql))
    assert [node["Index Name"] for node in reads if "Index Name" in node] == ["todos_pkey"], reads


def test_the_oldest_first_list_reads_todos_board_idx_backwards(shared_table: Personas) -> None:
    agent_a = Scope.of_endpoint(shared_table.endpoint_a.id)
    after = None
    for _ in range(3):
        sql, page = _page_sql(agent_a, after, queries.TodoFilters(sort="created"))
        plan = _plan(sql, analyze=True)

        scans = [node for node in _todos_reads(plan) if "Index Name" in node]
        assert [node["Index Name"] for node in scans] == ["todos_board_idx"], scans
        assert scans[0]["Scan Direction"] == "Backward"
        assert scans[0]["Actual Rows"] <= queries.PAGE_SIZE + 1
        created = [t.created_at for t in page.todos]
        assert created == sorted(created)
        after = page.next_cursor


def test_a_team_members_list_keeps_the_index_plan_and_reads_the_membership_once(
    shared_table: Personas,
) -> None:
    """Alice also sees, through a team, two of the other owners' endpoints: her scope is then
    four endpoints, read by their owner and team indexes after one read of her memberships
    (an InitPlan, never a SubPlan filtering every endpoint), and each page is still read from
    todos_board_idx, about a page per endpoint."""
    from switchboard import credentials, teams

    team = teams.create_team("ops", shared_table.alice)
    for slug in ("other-7", "other-8"):
        credentials.move_endpoint(Endpoint.objects.get(slug=slug), team, by=None)
    with connection.cursor() as cur:
        cur.execute("ANALYZE endpoints")
        cur.execute("ANALYZE team_members")
    alice = Scope.of_human(shared_table.alice.id)
    budget = 4 * (queries.PAGE_SIZE + 1)
    after = None
    for _ in range(2):
        sql, page = _page_sql(alice, after)
        plan = _plan(sql, analyze=True)

        reads = _todos_reads(plan)
        scans = [node for node in reads if "Index Name" in node]
        assert not [node for node in reads if node["Node Type"] == "Seq Scan"], reads
        assert {node["Index Name"] for node in scans} == {"todos_board_idx"}, reads
        fetched = max(node["Actual Rows"] * node["Actual Loops"] for node in reads)
        assert fetched <= budget, f"read {fetched} rows of todos for one page"
        endpoints = [n for n in plan_nodes(plan) if n.get("Relation Name") == "endpoints"]
        assert endpoints and all("SubPlan" not in n.get("Filter", "") for n in endpoints), plan
        memberships = [n for n in plan_nodes(plan) if n.get("Relation Name") == "team_members"]
        assert memberships and all(n["Actual Loops"] == 1 for n in memberships), plan
        assert {t.endpoint.slug for t in page.todos} == {
            "agent-a",
            "agent-a2",
            "other-7",
            "other-8",
        }
        after = page.next_cursor
