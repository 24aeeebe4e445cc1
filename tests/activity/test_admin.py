"""The read-only admin list of todo_activity, mounted under the Todo admin."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db import connection
from django.test import Client, RequestFactory
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from activity.admin import TodoActivityAdmin
from activity.models import TodoActivity
from tests.activity.helpers import add_activity
from tests.base import Personas
from todos import lifecycle

pytestmark = pytest.mark.django_db

LIST = "admin:activity_todoactivity_changelist"


@pytest.fixture
def admin_client(client: Client, personas: Personas) -> Client:
    client.force_login(personas.admin)
    return client


def _todo(personas: Personas, title: str) -> str:
    return lifecycle.create(personas.endpoint_a.id, queue="triage", title=title).id


def _page(client: Client, **params: str) -> str:
    response = client.get(reverse(LIST), data=params)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _rows(html: str) -> list[str]:
    """The result table's rows, as HTML."""
    body = html.split('<table id="result_list">', 1)[1].split("<tbody>", 1)[1]
    return body.split("</tbody>", 1)[0].split("<tr")[1:]


def _trail(todo_id: str, first_seq: int = 1) -> None:
    """A note, a Board action and a ring on the todo."""
    add_activity(todo_id, first_seq, message="ran the tests")
    add_activity(
        todo_id,
        first_seq + 1,
        kind="human_action",
        actor_kind="human",
        actor_ref="alice",
        message="retried",
    )
    add_activity(todo_id, first_seq + 2, kind="rung", actor_kind="system", actor_ref="doorbell")


def test_the_list_shows_every_column_and_links_each_row_to_its_todo(
    admin_client: Client, personas: Personas
) -> None:
    todo_id = _todo(personas, "noted")
    _trail(todo_id)

    rows = _rows(_page(admin_client))

    link = reverse("admin:todos_todo_change", args=[quote(todo_id)])
    assert len(rows) == 3
    # Newest first; within one instant (one test transaction), the latest seq first.
    assert [row.count(link) for row in rows] == [1, 1, 1]
    assert ["Rung" in rows[0], "Human Action" in rows[1], "Note" in rows[2]] == [True] * 3
    assert "doorbell" in rows[0] and "System" in rows[0]
    assert "alice" in rows[1] and "retried" in rows[1]
    assert "ran the tests" in rows[2] and "Endpoint" in rows[2]
    # No change links (a composite key has no change page) and no bulk actions.
    assert not any("/change/" in row.replace(link, "") for row in rows)
    assert not any('name="_selected_action"' in row for row in rows)


def test_the_list_filters_by_kind_and_by_actor_kind(
    admin_client: Client, personas: Personas
) -> None:
    todo_id = _todo(personas, "noted")
    _trail(todo_id)

    notes = _rows(_page(admin_client, kind="note"))
    humans = _rows(_page(admin_client, actor_kind="human"))

    assert len(notes) == 1 and "ran the tests" in notes[0]
    assert len(humans) == 1 and "alice" in humans[0]


def test_the_list_finds_a_todos_rows_by_its_exact_id(
    admin_client: Client, personas: Personas
) -> None:
    wanted, other = _todo(personas, "wanted"), _todo(personas, "other")
    add_activity(wanted, 1, message="the wanted one")
    add_activity(other, 1, message="another one")

    rows = _rows(_page(admin_client, q=wanted))

    assert len(rows) == 1 and "the wanted one" in rows[0]


def test_the_list_queries_do_not_grow_with_its_rows(
    admin_client: Client, personas: Personas
) -> None:
    _trail(_todo(personas, "first"))
    _page(admin_client)  # warm per-process caches (content types, permissions)
    with CaptureQueriesContext(connection) as few:
        _page(admin_client)
    for i in range(4):
        _trail(_todo(personas, f"more {i}"))
    with CaptureQueriesContext(connection) as many:
        _page(admin_client)

    assert len(many) == len(few), [q["sql"] for q in many.captured_queries]


def test_nobody_may_add_change_or_delete_activity_in_the_admin(personas: Personas) -> None:
    request = RequestFactory().get("/")
    request.user = personas.admin
    model_admin = TodoActivityAdmin(TodoActivity, admin.site)

    assert personas.admin.is_superuser
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request)
    assert not model_admin.has_delete_permission(request)


def test_the_todo_list_links_to_the_activity_list(admin_client: Client, personas: Personas) -> None:
    response = admin_client.get(reverse("admin:todos_todo_changelist"))

    assert reverse(LIST) in response.content.decode()


def test_someone_without_admin_access_is_sent_to_log_in(client: Client, personas: Personas) -> None:
    client.force_login(personas.alice)

    response = client.get(reverse(LIST))

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
