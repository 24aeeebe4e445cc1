"""The intake admin: sources (their secret shown once), rules (held to the same checks as the
table and the owner's endpoints), read-only events and the rule tester; written through
``todos.intake.sources``."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from switchboard.models import Endpoint
from tests.admin_helpers import admin_page, admin_url
from tests.base import Personas
from tests.factories import RuleFactory, SourceFactory
from todos import lifecycle
from todos.models import Event, Rule, Source, Todo

pytestmark = pytest.mark.django_db


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
        assert source.secret not in admin_page(admin_client, url)


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
    assert source.secret not in admin_page(
        admin_client, admin_url("admin:todos_source_change", source.pk)
    )


@pytest.mark.parametrize(
    ("scheme", "said", "not_said"),
    [
        ("github", "X-Signature-256: sha256=&lt;hex&gt;", "webhook-signature"),
        ("standard-webhooks", "webhook-signature: v1,", "X-Signature-256"),
    ],
)
def test_a_new_secret_comes_with_its_schemes_signing_hint(
    admin_client: Client, personas: Personas, scheme: str, said: str, not_said: str
) -> None:
    source = SourceFactory(owner=personas.alice, scheme=scheme)

    page = admin_client.post(admin_url("admin:todos_source_rotate_secret", source.pk))

    assert said in page.content.decode() and not_said not in page.content.decode()


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

    html = admin_page(admin_client, admin_url("admin:todos_event_change", event.pk))

    assert admin_url("admin:todos_todo_change", todo.id) in html
    assert "<script>x</script>" not in html
    assert admin_client.get(reverse("admin:todos_event_add")).status_code == 403
    html = admin_page(
        admin_client, reverse("admin:todos_event_changelist"), data={"disposition": "routed"}
    )
    assert f">{event.pk}<" in html


def test_a_rejected_event_shows_its_body_s_size_digest_and_prefix(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)
    event = Event.objects.create(
        source=source,
        disposition="rejected",
        body_size=5_242_880,
        body_sha256="ab" * 32,
        body_prefix='{"x": "<script>y</script>"',
    )

    html = admin_page(admin_client, admin_url("admin:todos_event_change", event.pk))

    assert "5242880" in html and "ab" * 32 in html
    assert "&lt;script&gt;y&lt;/script&gt;" in html and "<script>y" not in html


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
    assert url in admin_page(admin_client, admin_url("admin:todos_source_change", source.pk))

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


def test_the_rule_tester_names_an_unnamed_rule_as_the_board_does(
    admin_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice)
    rule = Rule.objects.create(source=source, endpoint=personas.endpoint_a, queue="ci", match={})
    url = admin_url("admin:todos_source_test_rules", source.pk)

    response = admin_client.post(url, {"headers": "", "payload": "{}"})

    assert f"<td>rule #0 (id {rule.pk})</td>" in response.content.decode()

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
    html = admin_page(admin_client, url)
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
    assert source.secret not in admin_page(admin_client, url)

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


def test_a_source_that_received_deliveries_is_deleted_with_its_events_and_no_event_alone(
    admin_client: Client, personas: Personas
) -> None:
    """Events go with their source (sources.delete_source), on its page and in the bulk
    delete; the todos made from them stay. An event is never deleted on its own."""
    source, other = SourceFactory(owner=personas.alice), SourceFactory(owner=personas.alice)
    RuleFactory(source=source, endpoint=personas.endpoint_a)
    routed = Event.objects.create(source=source, disposition="routed", payload={})
    Event.objects.create(source=source, disposition="rejected")
    Event.objects.create(source=other, disposition="rejected")
    todo = lifecycle.create(personas.endpoint_a.id, queue="ci", title="hook", event_id=routed.pk)
    url = admin_url("admin:todos_source_delete", source.pk)

    page = admin_page(admin_client, url)
    assert "permission to delete" not in page and "Events: 2" in page
    assert admin_client.post(url, {"post": "yes"}).status_code == 302

    assert not Source.objects.filter(pk=source.pk).exists()
    assert not Event.objects.filter(source_id=source.pk).exists()
    assert Todo.objects.get(pk=todo.id).event_id is None
    action = admin_client.post(
        reverse("admin:todos_source_changelist"),
        {"action": "delete_selected", "_selected_action": [other.pk], "post": "yes"},
    )
    assert action.status_code == 302 and not Event.objects.exists()

    kept = Event.objects.create(source=SourceFactory(owner=personas.alice), disposition="dropped")
    alone = admin_client.post(admin_url("admin:todos_event_delete", kept.pk), {"post": "yes"})
    assert alone.status_code == 403 and Event.objects.filter(pk=kept.pk).exists()


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
