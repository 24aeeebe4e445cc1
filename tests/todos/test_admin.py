"""The todo admin: read-only, todos change only through lifecycle actions; its attempts inline."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from activity import admin as activity_admin
from activity.models import TodoActivity
from attempts.models import TodoAttempt
from tests.admin_helpers import admin_messages, admin_page, admin_url
from tests.base import Personas
from tests.factories import HumanFactory, SourceFactory
from tests.reach import BOT, claimed, expire_lease
from todos import lifecycle, limits
from todos.models import Event, QueueSettings, Todo

pytestmark = pytest.mark.django_db


def test_todo_admin_refuses_add_change_and_delete(admin_client: Client, personas: Personas) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="work", title="as created")

    assert admin_client.get(reverse("admin:todos_todo_add")).status_code == 403
    change = admin_url("admin:todos_todo_change", todo.id)
    html = admin_page(admin_client, change)
    assert 'name="title"' not in html  # the view page has no inputs
    refused = admin_client.post(change, {"title": "edited", "state": "completed"})
    assert refused.status_code == 403
    delete = admin_url("admin:todos_todo_delete", todo.id)
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403
    stored = Todo.objects.get(pk=todo.id)
    assert (stored.title, stored.state) == ("as created", "pending")


def test_retry_action_sends_a_dead_letter_back_to_pending(
    admin_client: Client, personas: Personas
) -> None:
    dead = claimed(personas.endpoint_b.id, "work", owner=BOT, max_attempts=1).todo.id
    lifecycle.fail(personas.endpoint_b.id, dead, owner=BOT)
    assert Todo.objects.get(pk=dead).dead_letter

    response = admin_client.post(
        reverse("admin:todos_todo_changelist"),
        {"action": "retry_todos", "_selected_action": [dead], "index": "0"},
    )

    assert response.status_code == 302
    todo = Todo.objects.get(pk=dead)
    assert (todo.state, todo.attempt) == ("pending", 0)
    assert admin_messages(response) == ["Retried 1 todo."]


def test_cancel_action_cancels_and_reports_each_conflict(
    admin_client: Client, personas: Personas
) -> None:
    pending = lifecycle.create(personas.endpoint_a.id, queue="work", title="pending").id
    held = claimed(personas.endpoint_a.id, "work", owner=BOT).todo.id
    done = claimed(personas.endpoint_a.id, "work", owner=BOT).todo.id
    lifecycle.complete(personas.endpoint_a.id, done, owner=BOT)

    response = admin_client.post(
        reverse("admin:todos_todo_changelist"),
        {"action": "cancel_todos", "_selected_action": [pending, held, done], "index": "0"},
    )

    assert response.status_code == 302
    states = dict(Todo.objects.filter(pk__in=[pending, held, done]).values_list("id", "state"))
    assert states == {pending: "canceled", held: "canceled", done: "completed"}
    shown = admin_messages(response)
    assert len(shown) == 2
    assert shown[0].startswith(f"Not canceled: todo {done} cannot cancel now")
    assert shown[1] == "Canceled 2 todos."
    attempt = TodoAttempt.objects.get(todo_id=held)
    assert (attempt.outcome, attempt.summary) == ("canceled", "Canceled in the admin by admin")


# --- forget: asked first, through activity/forget.py --------------------------------------------


def _forget(client: Client, ids: list[str], **confirm: str) -> Any:
    return client.post(
        reverse("admin:todos_todo_changelist"),
        {"action": "forget_todos", "_selected_action": ids, **(confirm or {"index": "0"})},
    )


def _forget_rows(todo_id: str) -> list[tuple[str, str]]:
    return list(
        TodoActivity.objects.filter(todo_id=todo_id, kind="human_action", detail__action="forget")
        .order_by("seq")
        .values_list("actor_kind", "actor_ref")
    )


def test_forget_asks_first_then_forgets_the_finished_todos_as_the_board_does(
    admin_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    done = claimed(ep, "work", owner=BOT, title="secret plan").todo.id
    lifecycle.complete(ep, done, owner=BOT, summary="the secret")
    pending = lifecycle.create(ep, queue="work", title="still to do").id

    question = _forget(admin_client, [done, pending])

    # The question: what will be forgotten, what will not and why, and that it is for good.
    assert question.status_code == 200
    page = question.content.decode()
    forgettable = page.split('id="forgettable"')[1].split("</ul>")[0]
    skipped = page.split('id="skipped"')[1].split("</ul>")[0]
    assert done in forgettable and "secret plan" in forgettable and pending not in forgettable
    assert pending in skipped and "not finished (cancel it first)" in skipped
    assert "This cannot be undone." in page and 'value="Yes, forget"' in page
    assert Todo.objects.get(pk=done).title == "secret plan"  # asking changed nothing
    assert _forget_rows(done) == []

    answered = _forget(admin_client, [done, pending], post="yes")

    assert answered.status_code == 302
    assert admin_messages(answered) == [
        f"Not forgotten, not finished (cancel it first): {pending}.",
        "Forgot 1 todo: their content is erased; each keeps a tombstone.",
    ]
    gone = Todo.objects.get(pk=done)
    assert (gone.title, gone.payload, gone.result) == ("", {}, None)
    # Recorded as the Board's Forget records it, naming the staff member who forgot it.
    assert gone.forgotten_by == f"human:{personas.admin.id}"
    assert _forget_rows(done) == [("human", f"human:{personas.admin.id}")]
    kept = Todo.objects.get(pk=pending)
    assert (kept.title, kept.forgotten_at) == ("still to do", None)

    # The answer sent again forgets nothing more and says why.
    admin_page(admin_client, reverse("admin:todos_todo_changelist"))  # shows the messages above
    again = _forget(admin_client, [done], post="yes")
    assert admin_messages(again) == [f"Not forgotten, already forgotten: {done}."]
    assert len(_forget_rows(done)) == 1


def test_forget_with_nothing_finished_selected_asks_nothing(
    admin_client: Client, personas: Personas
) -> None:
    pending = lifecycle.create(personas.endpoint_a.id, queue="work", title="pending").id

    response = _forget(admin_client, [pending])

    assert response.status_code == 302
    assert admin_messages(response) == [
        f"Not forgotten, not finished (cancel it first): {pending}.",
        "None of the selected todos can be forgotten.",
    ]


def test_forget_refuses_a_selection_past_its_cap_and_changes_nothing(
    admin_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(activity_admin, "FORGET_AT_ONCE", 1)
    ep = personas.endpoint_a.id
    done = []
    for _ in range(2):
        todo_id = claimed(ep, "work", owner=BOT).todo.id
        lifecycle.complete(ep, todo_id, owner=BOT)
        done.append(todo_id)

    response = _forget(admin_client, done, post="yes")

    assert response.status_code == 302
    assert admin_messages(response)[0].startswith("Select at most 1 todos to forget at once;")
    assert not Todo.objects.filter(pk__in=done, forgotten_at__isnull=False).exists()


def test_forget_needs_the_permission_the_operator_transitions_need(
    client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    done = claimed(ep, "work", owner=BOT).todo.id
    lifecycle.complete(ep, done, owner=BOT)
    viewer = HumanFactory(username="viewer", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_todo"))
    client.force_login(viewer)

    listed = admin_page(client, reverse("admin:todos_todo_changelist"))
    assert "forget_todos" not in listed
    refused = _forget(client, [done], post="yes")

    assert Todo.objects.get(pk=done).forgotten_at is None
    assert _forget_rows(done) == []
    assert refused.status_code == 200 and admin_messages(refused) == []  # the list, unacted on


def test_todo_page_lists_attempts_newest_first_with_died_ones_marked(
    admin_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a
    todo_id = claimed(ep.id, "work", owner=BOT).todo.id
    expire_lease(todo_id)
    lifecycle.reap()
    lifecycle.claim(ep.id, todo_id, owner=BOT, claimant="second-run")
    lifecycle.fail(ep.id, todo_id, owner=BOT, summary="gave up <b>loudly</b>")

    html = admin_page(admin_client, admin_url("admin:todos_todo_change", todo_id))

    rows = re.findall(r'<td class="field-seq">\s*<p>(\d+)</p>', html)
    assert rows == ["2", "1"]
    assert "<strong>reaped</strong> (died)" in html
    assert "gave up &lt;b&gt;loudly&lt;/b&gt;" in html  # summaries are escaped


def test_todo_page_queries_do_not_grow_with_attempts(
    admin_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a
    one = claimed(ep.id, "work", owner=BOT).todo.id
    many = claimed(ep.id, "work", owner=BOT).todo.id
    for _ in range(4):
        lifecycle.release(ep.id, many, owner=BOT)
        lifecycle.claim(ep.id, many, owner=BOT)

    admin_page(admin_client, admin_url("admin:todos_todo_change", one))  # warm per-process caches
    with CaptureQueriesContext(connection) as few:
        admin_page(admin_client, admin_url("admin:todos_todo_change", one))
    with CaptureQueriesContext(connection) as lots:
        admin_page(admin_client, admin_url("admin:todos_todo_change", many))

    assert TodoAttempt.objects.filter(todo_id=many).count() == 5
    assert len(lots) == len(few) <= 12


def test_todo_list_filters_dead_letters(admin_client: Client, personas: Personas) -> None:
    dead = claimed(personas.endpoint_a.id, "work", owner=BOT, max_attempts=1).todo.id
    lifecycle.fail(personas.endpoint_a.id, dead, owner=BOT)
    retrying = claimed(personas.endpoint_a.id, "work", owner=BOT).todo.id
    lifecycle.fail(personas.endpoint_a.id, retrying, owner=BOT)

    html = admin_page(
        admin_client, reverse("admin:todos_todo_changelist"), data={"dead_letter": "yes"}
    )

    assert dead in html
    assert retrying not in html


def test_links_to_a_todo_survive_the_admins_id_quoting(
    admin_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The admin reads "_24" in a URL as "$": an unquoted link to td_24… finds no todo.
    monkeypatch.setattr(limits, "new_todo_id", lambda: "td_24aaaaaaaaaaaaaaaaaa")
    source = SourceFactory(owner=personas.alice)
    event = Event.objects.create(source=source, disposition="routed", payload={})
    todo_id = claimed(personas.endpoint_a.id, "work", owner=BOT, event_id=event.pk).todo.id
    assert todo_id == "td_24aaaaaaaaaaaaaaaaaa"

    pages = [
        admin_page(admin_client, reverse("admin:attempts_todoattempt_changelist")),
        admin_page(admin_client, admin_url("admin:todos_event_change", event.pk)),
    ]

    for html in pages:
        (link,) = re.findall(r'href="([^"]*/todos/todo/[^"]*/change/)"', html)
        assert "td_5F24" in link
        assert todo_id in admin_page(admin_client, link)


# --- queue limits: saved through lifecycle.set_queue_limits ------------------------------------


def test_the_add_page_of_queue_limits_renders_and_says_a_refusal_on_its_field(
    admin_client: Client, personas: Personas
) -> None:
    """A row not yet made has no tokens or update times to show (their database defaults
    failed to render: every GET of the add page was a 500), and a refused value comes back on
    the same page."""
    add = reverse("admin:todos_queuesettings_add")
    page = admin_page(admin_client, add)
    assert 'name="queue"' in page and "field-tokens" not in page
    listed = admin_page(admin_client, reverse("admin:todos_queuesettings_changelist"))
    assert "Queue settings" in listed and "settingss" not in listed

    fields = {"max_in_flight": "", "claims_per_minute": "", "run_timeout_seconds": ""}
    key = {"endpoint": str(personas.endpoint_a.id)}
    refused = admin_client.post(add, fields | key | {"queue": "a\x01b", "max_in_flight": "-1"})
    assert refused.status_code == 200
    errors = refused.context["adminform"].form.errors
    assert set(errors) == {"queue", "max_in_flight"}
    assert "control characters" in errors["queue"][0]
    wildcard = admin_client.post(add, fields | key | {"queue": "ci-*"})
    assert "must not contain *" in wildcard.context["adminform"].form.errors["queue"][0]
    assert not QueueSettings.objects.exists()

    added = admin_client.post(add, fields | key | {"queue": "triage", "claims_per_minute": "6"})
    assert added.status_code == 302
    assert QueueSettings.objects.get(queue="triage").claims_per_minute == 6


def test_queue_limits_are_added_and_changed_through_the_writer(
    admin_client: Client, personas: Personas
) -> None:
    add = reverse("admin:todos_queuesettings_add")
    fields = {"max_in_flight": "", "claims_per_minute": "", "run_timeout_seconds": ""}
    key = {"endpoint": str(personas.endpoint_a.id), "queue": "triage"}
    response = admin_client.post(add, fields | key | {"max_in_flight": "2"})
    assert response.status_code == 302, response.content.decode()[:2000]
    row = QueueSettings.objects.get()
    assert row.max_in_flight == 2
    assert row.updated_by == f"human:{personas.admin.id}"

    change = admin_url("admin:todos_queuesettings_change", row.pk)
    refused = admin_client.post(change, fields | {"max_in_flight": "-1"})
    assert refused.status_code == 200 and "must be between 0 and" in refused.content.decode()
    admin_client.post(change, fields | {"claims_per_minute": "30"})
    row.refresh_from_db()
    assert (row.max_in_flight, row.claims_per_minute) == (None, 30)
    listed = admin_page(admin_client, reverse("admin:todos_queuesettings_changelist"))
    assert "triage" in listed


# --- the queue's cost defaults and budget: the Board's checks ----------------------------------

LIMITS = {
    "max_in_flight": "",
    "claims_per_minute": "",
    "run_timeout_seconds": "",
    "default_max_cost_usd": "",
    "daily_budget_usd": "",
}


def test_the_queue_cost_cap_and_daily_budget_are_shown_set_and_cleared_through_the_writer(
    admin_client: Client, personas: Personas
) -> None:
    add = reverse("admin:todos_queuesettings_add")
    assert 'name="default_max_cost_usd"' in admin_page(admin_client, add)
    key = {"endpoint": str(personas.endpoint_a.id), "queue": "triage"}

    added = admin_client.post(
        add, LIMITS | key | {"default_max_cost_usd": "0.25", "daily_budget_usd": " 12.5 "}
    )

    assert added.status_code == 302, added.content.decode()[:2000]
    row = QueueSettings.objects.get()
    assert (row.default_max_cost_usd, row.daily_budget_usd) == (Decimal("0.25"), Decimal("12.5"))
    assert row.updated_by == f"human:{personas.admin.id}"
    # The writer's view of it, as the Board and the cost cap of a new todo read it.
    assert lifecycle.create(personas.endpoint_a.id, queue="triage").max_cost_usd == Decimal("0.25")
    change = admin_url("admin:todos_queuesettings_change", row.pk)
    page = admin_page(admin_client, change)
    assert 'name="daily_budget_usd" value="12.500000"' in page
    listed = admin_page(admin_client, reverse("admin:todos_queuesettings_changelist"))
    assert "12.500000" in listed and "0.250000" in listed

    cleared = admin_client.post(change, LIMITS | {"daily_budget_usd": "3"})
    assert cleared.status_code == 302
    row.refresh_from_db()
    assert (row.default_max_cost_usd, row.daily_budget_usd) == (None, Decimal(3))


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("default_max_cost_usd", "--1", "must be a number of US dollars"),
        ("default_max_cost_usd", "\u00b2", "must be a number of US dollars"),
        ("daily_budget_usd", "1e999", "must be at most 1000000"),
        ("daily_budget_usd", "-0.01", "must be a non-negative number of US dollars"),
        ("daily_budget_usd", "NaN", "must be a non-negative number of US dollars"),
        ("default_max_cost_usd", "0.0000001", "must have at most 6 decimals"),
        ("default_max_cost_usd", "a\x00b", "Null characters are not allowed."),
        # The limits as the Board reads them: digits int() takes and the Board refuses.
        ("max_in_flight", "--1", "must be a whole number, or blank for no limit"),
        ("claims_per_minute", "\u0663", "must be a whole number, or blank for no limit"),
        ("run_timeout_seconds", "1e999", "must be a whole number, or blank for no limit"),
        ("max_in_flight", "-1", "must be between 0 and 100000"),
    ],
)
def test_a_bad_queue_setting_is_named_on_its_field_and_changes_nothing(
    admin_client: Client, personas: Personas, field: str, value: str, said: str
) -> None:
    lifecycle.set_queue_limits(
        personas.endpoint_a.id, "triage", human_id=None, max_in_flight=2, daily_budget_usd="5"
    )
    row = QueueSettings.objects.get()
    change = admin_url("admin:todos_queuesettings_change", row.pk)

    response = admin_client.post(
        change, LIMITS | {"max_in_flight": "4", "daily_budget_usd": "6", field: value}
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {field: [said]}
    row.refresh_from_db()
    assert (row.max_in_flight, row.daily_budget_usd) == (2, Decimal(5))


def test_a_zero_written_with_a_vast_exponent_is_stored_as_zero(
    admin_client: Client, personas: Personas
) -> None:
    """``0e999999999999`` passed the amount check as it stood, and PostgreSQL refused to read
    the number it was sent as: a 500 (the Board's queue page: tests/board/test_queue_limits.py)."""
    add = reverse("admin:todos_queuesettings_add")
    key = {"endpoint": str(personas.endpoint_a.id), "queue": "triage"}

    added = admin_client.post(add, LIMITS | key | {"daily_budget_usd": "0e999999999999"})

    assert added.status_code == 302
    assert QueueSettings.objects.get().daily_budget_usd == Decimal(0)
