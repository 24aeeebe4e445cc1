"""django-admin: every page renders, secrets show once, todos change only through the lifecycle."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from attempts.models import TodoAttempt
from switchboard import runtime_settings
from switchboard.credentials import key_for_plaintext, mint_key
from switchboard.models import Endpoint, EndpointKey, Setting
from tests.base import Personas
from tests.factories import EndpointFactory, HumanFactory, RuleFactory, SourceFactory
from todos import lifecycle
from todos.models import Event, Rule, Source, Todo

pytestmark = pytest.mark.django_db

BOT = "bot-1"
KEY_RE = re.compile(r"sbk_[A-Za-z0-9_-]{43}")


@pytest.fixture
def admin_client(client: Client, personas: Personas) -> Client:
    client.force_login(personas.admin)
    return client


def _expire_lease(todo_id: str) -> None:
    # Leases lapse in PostgreSQL's clock, which tests cannot move: move the row instead.
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE todos SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
            [todo_id],
        )


def _claimed(endpoint: Endpoint, queue: str = "work", **create: Any) -> str:
    todo = lifecycle.create(endpoint.id, queue=queue, title="claimed todo", **create)
    claim = lifecycle.claim(endpoint.id, todo.id, owner=BOT)
    return claim.todo.id


def _add_rows(p: Personas, n: int) -> None:
    """``n`` more rows of every kind the admin lists, each reached the way the product does."""
    for i in range(n):
        owner = HumanFactory()
        mint_key(EndpointFactory(owner=owner))
        done = _claimed(p.endpoint_a, payload={"i": i})
        lifecycle.complete(p.endpoint_a.id, done, owner=BOT, summary="done")
        lifecycle.fail(p.endpoint_b.id, _claimed(p.endpoint_b), owner=BOT, summary="no")
        lifecycle.create(p.endpoint_a.id, queue=f"queue-{i}", title=f"pending {i}")
        source = SourceFactory(owner=p.alice)
        RuleFactory(source=source, endpoint=p.endpoint_a)
        Event.objects.create(source=source, disposition="routed", payload={"i": i})
    names = sorted(runtime_settings.FIELDS)
    for name in names[: min(len(names), Setting.objects.count() + n)]:
        runtime_settings.put(name, runtime_settings.FIELDS[name].metadata["min"])


def admin_url(name: str, pk: Any) -> str:
    """The URL of an object's admin page. Ids are quoted as the admin quotes them: a todo id
    like ``td_24…`` would otherwise be read back as ``td$…``."""
    return reverse(name, args=[quote(pk)])


def _page(client: Client, url: str, **kwargs: Any) -> str:
    response = client.get(url, **kwargs)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def _messages(response: Any) -> list[str]:
    """The messages a response queued (the test client's response carries its request)."""
    return [str(m) for m in get_messages(response.wsgi_request)]


CHANGELISTS = [
    "admin:switchboard_human_changelist",
    "admin:switchboard_endpoint_changelist",
    "admin:switchboard_endpointkey_changelist",
    "admin:switchboard_setting_changelist",
    "admin:todos_todo_changelist",
    "admin:todos_source_changelist",
    "admin:todos_rule_changelist",
    "admin:todos_event_changelist",
    "admin:attempts_todoattempt_changelist",
]


# --- every page renders --------------------------------------------------------------------------


@pytest.mark.parametrize("name", CHANGELISTS)
def test_changelist_renders_for_a_superuser(
    admin_client: Client, personas: Personas, name: str
) -> None:
    _add_rows(personas, 2)
    _page(admin_client, reverse(name))


@pytest.mark.parametrize("name", CHANGELISTS)
def test_changelist_queries_do_not_grow_with_its_rows(
    admin_client: Client, personas: Personas, name: str
) -> None:
    url = reverse(name)
    _add_rows(personas, 1)
    _page(admin_client, url)  # warm per-process caches (content types, permissions)
    with CaptureQueriesContext(connection) as few:
        _page(admin_client, url)
    _add_rows(personas, 4)
    with CaptureQueriesContext(connection) as many:
        _page(admin_client, url)

    assert len(many) == len(few), [q["sql"] for q in many.captured_queries]
    assert len(few) <= 15


def test_change_page_of_every_model_renders_for_a_superuser(
    admin_client: Client, personas: Personas
) -> None:
    _add_rows(personas, 1)
    pages = {
        "switchboard_human": personas.alice.pk,
        "switchboard_endpoint": personas.endpoint_a.pk,
        "switchboard_endpointkey": EndpointKey.objects.filter(endpoint=personas.endpoint_a)
        .get()
        .pk,
        "switchboard_setting": Setting.objects.first().pk,  # type: ignore[union-attr]
        "todos_todo": Todo.objects.filter(state="completed").first().pk,  # type: ignore[union-attr]
        "todos_source": Source.objects.first().pk,  # type: ignore[union-attr]
        "todos_rule": Rule.objects.first().pk,  # type: ignore[union-attr]
        "todos_event": Event.objects.first().pk,  # type: ignore[union-attr]
    }
    for name, pk in pages.items():
        _page(admin_client, admin_url(f"admin:{name}_change", pk))


@pytest.mark.parametrize(
    "name",
    [
        "switchboard_human",
        "switchboard_endpoint",
        "switchboard_setting",
        "todos_source",
        "todos_rule",
    ],
)
def test_add_page_renders_where_adding_is_allowed(admin_client: Client, name: str) -> None:
    _page(admin_client, reverse(f"admin:{name}_add"))


# --- keys: shown once, hash never ----------------------------------------------------------------


def _assert_no_secret_material(html: str, plaintext: str) -> None:
    assert plaintext not in html
    assert plaintext[len("sbk_") + 8 :] not in html
    for key in EndpointKey.objects.all():
        assert bytes(key.key_hash).hex() not in html


def test_key_is_shown_once_at_minting(admin_client: Client, personas: Personas) -> None:
    endpoint = personas.endpoint_a
    response = admin_client.post(admin_url("admin:switchboard_endpoint_mint_key", endpoint.pk))

    assert response.status_code == 200
    assert response["Cache-Control"].startswith("max-age=0")
    assert "no-store" in response["Cache-Control"]
    shown = KEY_RE.findall(response.content.decode())
    assert len(set(shown)) == 1
    plaintext = shown[0]
    found = key_for_plaintext(plaintext)
    assert found is not None and found.endpoint_id == endpoint.pk

    change = _page(admin_client, admin_url("admin:switchboard_endpoint_change", endpoint.pk))
    assert found.prefix in change
    _assert_no_secret_material(change, plaintext)
    for url in (
        reverse("admin:switchboard_endpointkey_changelist"),
        admin_url("admin:switchboard_endpointkey_change", found.pk),
        reverse("admin:switchboard_endpoint_changelist"),
    ):
        _assert_no_secret_material(_page(admin_client, url), plaintext)


def test_minting_needs_a_post(admin_client: Client, personas: Personas) -> None:
    url = admin_url("admin:switchboard_endpoint_mint_key", personas.endpoint_a.pk)
    before = EndpointKey.objects.count()

    assert admin_client.get(url).status_code == 405
    assert EndpointKey.objects.count() == before


def test_minting_for_a_revoked_endpoint_is_refused(
    admin_client: Client, personas: Personas
) -> None:
    lifecycle.revoke_endpoint(personas.alice.id, personas.endpoint_a.id)
    before = EndpointKey.objects.count()

    response = admin_client.post(
        admin_url("admin:switchboard_endpoint_mint_key", personas.endpoint_a.pk)
    )

    assert response.status_code == 302
    assert EndpointKey.objects.count() == before
    assert not KEY_RE.search(response.content.decode())


def test_mint_action_shows_one_new_key_per_selected_endpoint(
    admin_client: Client, personas: Personas
) -> None:
    endpoints = [personas.endpoint_a, personas.endpoint_b]
    response = admin_client.post(
        reverse("admin:switchboard_endpoint_changelist"),
        {"action": "mint_keys", "_selected_action": [e.pk for e in endpoints], "index": "0"},
    )

    assert response.status_code == 200
    shown = set(KEY_RE.findall(response.content.decode()))
    owners = {key_for_plaintext(k).endpoint_id for k in shown}  # type: ignore[union-attr]
    assert owners == {e.pk for e in endpoints}


def test_adding_an_endpoint_mints_its_first_key_and_shows_it_once(
    admin_client: Client, personas: Personas
) -> None:
    response = admin_client.post(
        reverse("admin:switchboard_endpoint_add"),
        {
            "owner": personas.bob.pk,
            "slug": "night-shift",
            "name": "Night shift",
            "verbs": ["claim_next", "list_todos", "complete"],
            "push_url": "",
            "keys-TOTAL_FORMS": "0",
            "keys-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 200, response.content.decode()[:2000]
    endpoint = Endpoint.objects.get(slug="night-shift")
    assert endpoint.owner == personas.bob
    assert endpoint.verbs == ["list_todos", "claim_next", "complete"]
    (plaintext,) = set(KEY_RE.findall(response.content.decode()))
    assert key_for_plaintext(plaintext).endpoint_id == endpoint.pk  # type: ignore[union-attr]
    change = _page(admin_client, admin_url("admin:switchboard_endpoint_change", endpoint.pk))
    _assert_no_secret_material(change, plaintext)


def test_the_add_form_offers_the_drain_verbs_checked(admin_client: Client) -> None:
    html = _page(admin_client, reverse("admin:switchboard_endpoint_add"))
    checked = re.findall(r'<input type="checkbox" name="verbs" value="(\w+)"[^>]*checked', html)
    assert set(checked) == {
        "list_todos",
        "get_todo",
        "claim_next",
        "claim",
        "heartbeat",
        "complete",
        "fail",
        "release",
    }


def test_keys_cannot_be_added_changed_or_deleted_directly(
    admin_client: Client, personas: Personas
) -> None:
    key = EndpointKey.objects.filter(endpoint=personas.endpoint_a).get()

    assert admin_client.get(reverse("admin:switchboard_endpointkey_add")).status_code == 403
    assert (
        admin_client.post(
            admin_url("admin:switchboard_endpointkey_change", key.pk), {"prefix": "sbk_x"}
        ).status_code
        == 403
    )
    assert (
        admin_client.post(
            admin_url("admin:switchboard_endpointkey_delete", key.pk), {"post": "yes"}
        ).status_code
        == 403
    )
    key.refresh_from_db()
    assert key.prefix.startswith("sbk_") and key.prefix != "sbk_x"


def test_revoke_key_action_revokes_only_the_selected_keys(
    admin_client: Client, personas: Personas
) -> None:
    key_a = EndpointKey.objects.filter(endpoint=personas.endpoint_a).get()

    response = admin_client.post(
        reverse("admin:switchboard_endpointkey_changelist"),
        {"action": "revoke_keys", "_selected_action": [key_a.pk], "index": "0"},
    )

    assert response.status_code == 302
    assert key_for_plaintext(personas.key_a) is None
    assert key_for_plaintext(personas.key_b) is not None
    assert _messages(response) == ["Revoked 1 key."]


# --- endpoints: revocation through the lifecycle -------------------------------------------------


def test_revoke_endpoint_asks_first_then_dead_letters_its_unfinished_todos(
    admin_client: Client, personas: Personas
) -> None:
    endpoint = personas.endpoint_a
    pending = lifecycle.create(endpoint.id, queue="work", title="pending").id
    claimed = _claimed(endpoint)
    done = _claimed(endpoint)
    lifecycle.complete(endpoint.id, done, owner=BOT)
    url = reverse("admin:switchboard_endpoint_changelist")
    action = {"action": "revoke_endpoints", "_selected_action": [endpoint.pk]}

    asked = admin_client.post(url, {**action, "index": "0"})

    assert asked.status_code == 200
    assert "2 unfinished todos" in asked.content.decode()
    endpoint.refresh_from_db()
    assert endpoint.revoked_at is None

    confirmed = admin_client.post(url, {**action, "post": "yes"})

    assert confirmed.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.revoked_at is not None
    states = dict(Todo.objects.filter(endpoint=endpoint).values_list("id", "state"))
    assert states == {pending: "failed", claimed: "failed", done: "completed"}
    assert _messages(confirmed) == ["Revoked agent-a; dead-lettered 2 unfinished todos."]
    assert key_for_plaintext(personas.key_a) is None
    attempt = TodoAttempt.objects.get(todo_id=claimed)
    assert (attempt.outcome, attempt.disposition) == ("revoked", "dead_lettered")


def test_endpoints_cannot_be_deleted(admin_client: Client, personas: Personas) -> None:
    url = admin_url("admin:switchboard_endpoint_delete", personas.endpoint_a.pk)
    assert admin_client.post(url, {"post": "yes"}).status_code == 403
    assert Endpoint.objects.filter(pk=personas.endpoint_a.pk).exists()


def test_the_slug_of_an_existing_endpoint_is_read_only(
    admin_client: Client, personas: Personas
) -> None:
    html = _page(
        admin_client, admin_url("admin:switchboard_endpoint_change", personas.endpoint_a.pk)
    )
    assert 'name="slug"' not in html
    assert 'name="name"' in html


# --- runtime settings ----------------------------------------------------------------------------


def test_setting_value_is_validated_against_its_bounds(admin_client: Client) -> None:
    url = reverse("admin:switchboard_setting_add")

    refused = admin_client.post(url, {"key": "retry_base_seconds", "value": "0"})

    assert refused.status_code == 200
    assert "retry_base_seconds must be between 1 and 86400, not 0" in refused.content.decode()
    assert not Setting.objects.exists()

    not_int = admin_client.post(url, {"key": "retry_base_seconds", "value": '"ten"'})
    assert "must be an integer" in not_int.content.decode()


def test_saving_a_setting_takes_effect_at_once(
    admin_client: Client, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    assert runtime_settings.current().retry_base_seconds == 30

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:switchboard_setting_add"),
            {"key": "retry_base_seconds", "value": "45"},
        )

    assert response.status_code == 302
    assert runtime_settings.current().retry_base_seconds == 45

    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            admin_url("admin:switchboard_setting_delete", "retry_base_seconds"),
            {"post": "yes"},
        )

    assert runtime_settings.current().retry_base_seconds == 30


def test_setting_page_shows_the_default_beside_the_value(admin_client: Client) -> None:
    runtime_settings.put("retry_max_seconds", 120)

    html = _page(admin_client, admin_url("admin:switchboard_setting_change", "retry_max_seconds"))

    assert 'value="120"' in html
    assert "3600" in html  # the default
    assert "Longest backoff between retries." in html


# --- todos: read-only, changed only by lifecycle actions ------------------------------------------


def test_todo_admin_refuses_add_change_and_delete(admin_client: Client, personas: Personas) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="work", title="as created")

    assert admin_client.get(reverse("admin:todos_todo_add")).status_code == 403
    change = admin_url("admin:todos_todo_change", todo.id)
    html = _page(admin_client, change)
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
    dead = _claimed(personas.endpoint_b, max_attempts=1)
    lifecycle.fail(personas.endpoint_b.id, dead, owner=BOT)
    assert Todo.objects.get(pk=dead).dead_letter

    response = admin_client.post(
        reverse("admin:todos_todo_changelist"),
        {"action": "retry_todos", "_selected_action": [dead], "index": "0"},
    )

    assert response.status_code == 302
    todo = Todo.objects.get(pk=dead)
    assert (todo.state, todo.attempt) == ("pending", 0)
    assert _messages(response) == ["Retried 1 todo."]


def test_cancel_action_cancels_and_reports_each_conflict(
    admin_client: Client, personas: Personas
) -> None:
    pending = lifecycle.create(personas.endpoint_a.id, queue="work", title="pending").id
    held = _claimed(personas.endpoint_a)
    done = _claimed(personas.endpoint_a)
    lifecycle.complete(personas.endpoint_a.id, done, owner=BOT)

    response = admin_client.post(
        reverse("admin:todos_todo_changelist"),
        {"action": "cancel_todos", "_selected_action": [pending, held, done], "index": "0"},
    )

    assert response.status_code == 302
    states = dict(Todo.objects.filter(pk__in=[pending, held, done]).values_list("id", "state"))
    assert states == {pending: "canceled", held: "canceled", done: "completed"}
    shown = _messages(response)
    assert len(shown) == 2
    assert shown[0].startswith(f"Not canceled: todo {done} cannot cancel now")
    assert shown[1] == "Canceled 2 todos."
    attempt = TodoAttempt.objects.get(todo_id=held)
    assert (attempt.outcome, attempt.summary) == ("canceled", "Canceled in the admin by admin")


def test_todo_page_lists_attempts_newest_first_with_died_ones_marked(
    admin_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a
    todo_id = _claimed(ep)
    _expire_lease(todo_id)
    lifecycle.reap()
    lifecycle.claim(ep.id, todo_id, owner=BOT, claimant="second-run")
    lifecycle.fail(ep.id, todo_id, owner=BOT, summary="gave up <b>loudly</b>")

    html = _page(admin_client, admin_url("admin:todos_todo_change", todo_id))

    rows = re.findall(r'<td class="field-seq">\s*<p>(\d+)</p>', html)
    assert rows == ["2", "1"]
    assert "<strong>reaped</strong> (died)" in html
    assert "gave up &lt;b&gt;loudly&lt;/b&gt;" in html  # summaries are escaped


def test_todo_page_queries_do_not_grow_with_attempts(
    admin_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a
    one = _claimed(ep)
    many = _claimed(ep)
    for _ in range(4):
        lifecycle.release(ep.id, many, owner=BOT)
        lifecycle.claim(ep.id, many, owner=BOT)

    _page(admin_client, admin_url("admin:todos_todo_change", one))  # warm per-process caches
    with CaptureQueriesContext(connection) as few:
        _page(admin_client, admin_url("admin:todos_todo_change", one))
    with CaptureQueriesContext(connection) as lots:
        _page(admin_client, admin_url("admin:todos_todo_change", many))

    assert TodoAttempt.objects.filter(todo_id=many).count() == 5
    assert len(lots) == len(few) <= 12


def test_attempts_list_filters_by_outcome_and_links_each_row_to_its_todo(
    admin_client: Client, personas: Personas
) -> None:
    done = _claimed(personas.endpoint_a)
    lifecycle.complete(personas.endpoint_a.id, done, owner=BOT)
    failed = _claimed(personas.endpoint_a)
    lifecycle.fail(personas.endpoint_a.id, failed, owner=BOT)

    html = _page(
        admin_client, reverse("admin:attempts_todoattempt_changelist"), data={"outcome": "failed"}
    )

    assert admin_url("admin:todos_todo_change", failed) in html
    assert done not in html


def test_todo_list_filters_dead_letters(admin_client: Client, personas: Personas) -> None:
    dead = _claimed(personas.endpoint_a, max_attempts=1)
    lifecycle.fail(personas.endpoint_a.id, dead, owner=BOT)
    retrying = _claimed(personas.endpoint_a)
    lifecycle.fail(personas.endpoint_a.id, retrying, owner=BOT)

    html = _page(admin_client, reverse("admin:todos_todo_changelist"), data={"dead_letter": "yes"})

    assert dead in html
    assert retrying not in html


# --- sources, rules, events -----------------------------------------------------------------------


def test_source_secret_is_shown_once_at_creation(admin_client: Client, personas: Personas) -> None:
    response = admin_client.post(
        reverse("admin:todos_source_add"),
        {
            "owner": personas.alice.pk,
            "slug": "github",
            "name": "GitHub",
            "verify": "on",
            "rules-TOTAL_FORMS": "0",
            "rules-INITIAL_FORMS": "0",
        },
    )

    assert response.status_code == 200, response.content.decode()[:2000]
    source = Source.objects.get(slug="github")
    assert len(source.secret) >= 40
    assert source.secret in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    for url in (
        admin_url("admin:todos_source_change", source.pk),
        reverse("admin:todos_source_changelist"),
    ):
        assert source.secret not in _page(admin_client, url)


def test_generating_a_new_secret_replaces_the_old_one_and_shows_it_once(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)
    old = source.secret

    response = admin_client.post(admin_url("admin:todos_source_rotate_secret", source.pk))

    assert response.status_code == 200
    source.refresh_from_db()
    assert source.secret != old
    assert source.secret in response.content.decode()
    assert source.secret not in _page(
        admin_client, admin_url("admin:todos_source_change", source.pk)
    )


def _rule_form(source: Source, endpoint: Endpoint, **overrides: Any) -> dict[str, Any]:
    return {
        "source": source.pk,
        "position": "0",
        "name": "to the agent",
        "enabled": "on",
        "endpoint": endpoint.pk,
        "queue": "ci",
        "max_attempts": "5",
        "match": '{"headers": {"X-GitHub-Event": "check_run"}}',
        "title_template": "",
        "work_order_template": "",
        **overrides,
    }


def test_a_rule_saves_its_match_as_a_json_object(admin_client: Client, personas: Personas) -> None:
    source = SourceFactory(owner=personas.alice)

    response = admin_client.post(
        reverse("admin:todos_rule_add"), _rule_form(source, personas.endpoint_a)
    )

    assert response.status_code == 302
    assert Rule.objects.get(source=source).match == {"headers": {"X-GitHub-Event": "check_run"}}


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"match": "[1, 2]"}, "match", "match must be a JSON object"),
        ({"match": '{"payload": {"a": {"regex": "."}}}'}, "match", "unknown operator"),
        ({"max_attempts": "0"}, "max_attempts", "Between 1 and 1000."),
        ({"queue": "q" * 129}, "queue", "A queue is 1 to 128 bytes"),
    ],
)
def test_a_rule_the_table_would_refuse_is_refused_by_the_form(
    admin_client: Client, personas: Personas, overrides: dict[str, str], field: str, message: str
) -> None:
    source = SourceFactory(owner=personas.alice)

    response = admin_client.post(
        reverse("admin:todos_rule_add"), _rule_form(source, personas.endpoint_a, **overrides)
    )

    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Rule.objects.exists()


def test_a_rule_cannot_route_to_another_owners_endpoint(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)

    response = admin_client.post(
        reverse("admin:todos_rule_add"), _rule_form(source, personas.endpoint_b)
    )

    assert response.status_code == 200
    assert "Choose an endpoint the source&#x27;s owner owns." in response.content.decode()
    assert not Rule.objects.exists()


def test_events_are_read_only_and_show_their_todos(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)
    event = Event.objects.create(
        source=source, disposition="routed", payload={"title": "<script>x</script>"}
    )
    todo = lifecycle.create(
        personas.endpoint_a.id, queue="ci", title="from hook", event_id=event.pk
    )

    html = _page(admin_client, admin_url("admin:todos_event_change", event.pk))

    assert admin_url("admin:todos_todo_change", todo.id) in html
    assert "<script>x</script>" not in html
    assert admin_client.get(reverse("admin:todos_event_add")).status_code == 403
    html = _page(
        admin_client, reverse("admin:todos_event_changelist"), data={"disposition": "routed"}
    )
    assert f">{event.pk}<" in html


def _inline_rule(source: Source, endpoint: Endpoint) -> dict[str, Any]:
    return {
        "owner": source.owner_id,
        "slug": source.slug,
        "name": source.name,
        "verify": "on",
        "rules-TOTAL_FORMS": "1",
        "rules-INITIAL_FORMS": "0",
        "rules-0-position": "1",
        "rules-0-name": "inline rule",
        "rules-0-enabled": "on",
        "rules-0-endpoint": endpoint.pk,
        "rules-0-queue": "ci",
        "rules-0-max_attempts": "3",
    }


def test_a_rule_added_on_its_source_page_is_held_to_the_same_owner_check(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)
    url = admin_url("admin:todos_source_change", source.pk)

    refused = admin_client.post(url, _inline_rule(source, personas.endpoint_b))

    assert refused.status_code == 200
    assert "Choose an endpoint the source&#x27;s owner owns." in refused.content.decode()
    assert not Rule.objects.exists()

    accepted = admin_client.post(url, _inline_rule(source, personas.endpoint_a))

    assert accepted.status_code == 302
    rule = Rule.objects.get(source=source)
    assert (rule.endpoint_id, rule.queue, rule.max_attempts) == (personas.endpoint_a.pk, "ci", 3)


def test_a_setting_cannot_be_added_twice(admin_client: Client) -> None:
    runtime_settings.put("retry_base_seconds", 40)

    response = admin_client.post(
        reverse("admin:switchboard_setting_add"), {"key": "retry_base_seconds", "value": "50"}
    )

    assert response.status_code == 200
    assert "already exists" in response.content.decode()
    assert Setting.objects.get().value == 40


def test_links_to_a_todo_survive_the_admins_id_quoting(
    admin_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The admin reads "_24" in a URL as "$": an unquoted link to td_24… finds no todo.
    monkeypatch.setattr(lifecycle, "new_todo_id", lambda: "td_24aaaaaaaaaaaaaaaaaa")
    source = SourceFactory(owner=personas.alice)
    event = Event.objects.create(source=source, disposition="routed", payload={})
    todo_id = _claimed(personas.endpoint_a, event_id=event.pk)
    assert todo_id == "td_24aaaaaaaaaaaaaaaaaa"

    pages = [
        _page(admin_client, reverse("admin:attempts_todoattempt_changelist")),
        _page(admin_client, admin_url("admin:todos_event_change", event.pk)),
    ]

    for html in pages:
        (link,) = re.findall(r'href="([^"]*/todos/todo/[^"]*/change/)"', html)
        assert "td_5F24" in link
        assert todo_id in _page(admin_client, link)


def test_the_rule_tester_shows_the_trace_and_creates_nothing(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)
    Rule.objects.create(
        source=source,
        endpoint=personas.endpoint_a,
        queue="ci",
        name="failures",
        match={"headers": {"X-GitHub-Event": "check_run"}, "payload": {"action": "completed"}},
        title_template="Fix {{ check_run.name }} <b>",
    )
    url = admin_url("admin:todos_source_test_rules", source.pk)
    assert url in _page(admin_client, admin_url("admin:todos_source_change", source.pk))

    response = admin_client.post(
        url,
        {
            "headers": "X-GitHub-Event: check_run\nAuthorization: Bearer sbk_nope",
            "payload": '{"action": "completed", "check_run": {"name": "<script>x</script>"}}',
        },
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "would create 1 todo" in html
    assert "Fix &lt;script&gt;x&lt;/script&gt; &lt;b&gt;" in html
    assert "<script>x</script>" not in html
    # Only the form echoes what was pasted; the trace never sees a secret header.
    assert html.count("sbk_nope") == 1
    assert "authorization" not in html.split("Routing trace")[1].lower()
    assert not Todo.objects.exists() and not Event.objects.exists()

    dropped = admin_client.post(url, {"headers": "", "payload": '{"action": "created"}'})
    assert "would be stored as <strong>dropped</strong>" in dropped.content.decode()

    bad = admin_client.post(url, {"headers": "no colon here", "payload": "{"})
    assert "Line 1 is not" in bad.content.decode()
    assert "not JSON" in bad.content.decode()


def test_a_rule_added_with_a_new_source_is_held_to_the_owner_check(
    admin_client: Client, personas: Personas
) -> None:
    unsaved = Source(owner=personas.alice, slug="fresh", name="Fresh")

    refused = admin_client.post(
        reverse("admin:todos_source_add"), _inline_rule(unsaved, personas.endpoint_b)
    )

    assert refused.status_code == 200
    assert "Choose an endpoint the source&#x27;s owner owns." in refused.content.decode()
    assert not Source.objects.filter(slug="fresh").exists()


# --- configuration goes through its writers -------------------------------------------------------


def _endpoint_change(endpoint: Endpoint, **changes: Any) -> dict[str, Any]:
    keys = list(EndpointKey.objects.filter(endpoint=endpoint).order_by("-created_at"))
    data: dict[str, Any] = {
        "name": endpoint.name,
        "verbs": list(endpoint.verbs),
        "push_url": endpoint.push_url or "",
        "keys-TOTAL_FORMS": str(len(keys)),
        "keys-INITIAL_FORMS": str(len(keys)),
        **{f"keys-{n}-id": key.pk for n, key in enumerate(keys)},
        **{f"keys-{n}-endpoint": endpoint.pk for n in range(len(keys))},
    }
    data.update(changes)
    return data


def test_editing_an_endpoint_stores_its_verbs_once_each_in_order_and_keeps_owner_and_slug(
    admin_client: Client, personas: Personas
) -> None:
    endpoint = personas.endpoint_a
    url = admin_url("admin:switchboard_endpoint_change", endpoint.pk)
    html = _page(admin_client, url)
    assert 'name="owner"' not in html and 'name="slug"' not in html

    response = admin_client.post(
        url,
        _endpoint_change(
            endpoint,
            name="Renamed",
            verbs=["release", "claim_next", "release"],
            owner=personas.bob.pk,
            slug="moved",
        ),
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    endpoint.refresh_from_db()
    assert (endpoint.name, endpoint.verbs, endpoint.owner, endpoint.slug) == (
        "Renamed",
        ["claim_next", "release"],
        personas.alice,
        "agent-a",
    )


def _source_change(source: Source, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": source.name,
        "rules-TOTAL_FORMS": "0",
        "rules-INITIAL_FORMS": "0",
        **({"verify": "on"} if source.verify else {}),
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_the_owner_and_slug_of_an_existing_source_are_read_only(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice, slug="gh")
    url = admin_url("admin:todos_source_change", source.pk)
    html = _page(admin_client, url)
    assert 'name="owner"' not in html and 'name="slug"' not in html

    response = admin_client.post(
        url, _source_change(source, name="GitHub", owner=personas.bob.pk, slug="moved")
    )

    assert response.status_code == 302
    source.refresh_from_db()
    assert (source.name, source.owner, source.slug) == ("GitHub", personas.alice, "gh")


def test_turning_verification_on_in_the_admin_shows_a_minted_secret_once(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice, slug="open", verify=False, secret="")
    url = admin_url("admin:todos_source_change", source.pk)

    response = admin_client.post(url, _source_change(source, verify="on"))

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    source.refresh_from_db()
    assert source.verify and source.secret.startswith("sbw_")
    assert source.secret in response.content.decode()
    assert source.secret not in _page(admin_client, url)

    off = admin_client.post(url, _source_change(source, verify=None))

    assert off.status_code == 302
    secret = source.secret
    source.refresh_from_db()
    assert (source.verify, source.secret) == (False, secret)


def test_deleting_in_the_admin_removes_the_rule_or_the_source_with_its_rules(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)
    one, two = (RuleFactory(source=source, endpoint=personas.endpoint_a) for _ in range(2))
    other = SourceFactory(owner=personas.alice)
    RuleFactory(source=other, endpoint=personas.endpoint_a)

    single = admin_client.post(admin_url("admin:todos_rule_delete", one.pk), {"post": "yes"})
    assert single.status_code == 302
    assert list(Rule.objects.filter(source=source)) == [two]

    action = admin_client.post(
        reverse("admin:todos_source_changelist"),
        {"action": "delete_selected", "_selected_action": [source.pk], "post": "yes"},
    )
    assert action.status_code == 302
    assert not Source.objects.filter(pk=source.pk).exists()
    assert not Rule.objects.filter(source_id=source.pk).exists()
    assert Rule.objects.filter(source=other).count() == 1


def test_a_rule_deleted_on_its_source_page_is_gone(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)
    rule = RuleFactory(source=source, endpoint=personas.endpoint_a, queue="ci", name="r")
    data = _source_change(
        source,
        **{
            "rules-TOTAL_FORMS": "1",
            "rules-INITIAL_FORMS": "1",
            "rules-0-id": rule.pk,
            "rules-0-source": source.pk,
            "rules-0-position": rule.position,
            "rules-0-name": rule.name,
            "rules-0-enabled": "on",
            "rules-0-endpoint": personas.endpoint_a.pk,
            "rules-0-queue": rule.queue,
            "rules-0-max_attempts": rule.max_attempts,
            "rules-0-DELETE": "on",
        },
    )

    response = admin_client.post(admin_url("admin:todos_source_change", source.pk), data)

    assert response.status_code == 302, response.content.decode()[:3000]
    assert not Rule.objects.filter(pk=rule.pk).exists()


def test_editing_a_rule_in_the_admin_keeps_its_position_when_left_empty(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)
    rule = RuleFactory(source=source, endpoint=personas.endpoint_a, position=30)

    response = admin_client.post(
        admin_url("admin:todos_rule_change", rule.pk),
        _rule_form(source, personas.endpoint_a, position="", queue="edited"),
    )

    assert response.status_code == 302, response.content.decode()[:3000]
    rule.refresh_from_db()
    assert (rule.queue, rule.position) == ("edited", 30)
