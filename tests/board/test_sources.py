"""Sources and rules on the Board: the list, creation with the secret shown once, rotation,
verification, rules (with Rule.full_clean's errors inline), the rule tester, recent events."""

from __future__ import annotations

import hashlib
import html
import json
import re
import secrets
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client
from django.urls import reverse

from tests.base import Personas
from tests.factories import EndpointFactory, RuleFactory, SourceFactory
from tests.intake.conftest import CHECK_RUN_FAILED, SECRET
from todos import lifecycle
from todos.intake import sources
from todos.intake.routing import sign
from todos.models import Event, Rule, Source, Todo

pytestmark = pytest.mark.django_db

SECRET_RE = re.compile(r"sbw_[A-Za-z0-9_-]{43}")
CHECK_RUN_MATCH: dict[str, Any] = {
    "headers": {"X-GitHub-Event": "check_run"},
    "payload": {
        "action": "completed",
        "check_run.conclusion": {"in": ["failure", "timed_out"]},
    },
}
XSS = "<script>alert('pwned')</script>"


def github_source(personas: Personas, slug: str = "github") -> Source:
    """Alice's GitHub-style source with one check_run rule to agent-a's ci-fix queue."""
    source = SourceFactory(owner=personas.alice, slug=slug, secret=SECRET)
    RuleFactory(
        source=source,
        endpoint=personas.endpoint_a,
        name="CI failures",
        queue="ci-fix",
        position=10,
        match=CHECK_RUN_MATCH,
        title_template="Fix {{ check_run.name }} on {{ repository.full_name }}",
        work_order_template="See {{ check_run.html_url }}; runner {{ check_run.runner }}",
    )
    return source


def deliver(
    slug: str, payload: Any = None, *, secret: str = SECRET, delivery: str | None = None
) -> dict[str, Any]:
    """POST a signed GitHub-style delivery to /hooks/<slug> through the real view. The default
    body carries the delivery's own check run id, as GitHub's do: a signed body is accepted once
    per source (the same body again is a replay, migration todos.0018_events_signed_body)."""
    if payload is None:
        run = {**CHECK_RUN_FAILED["check_run"], "id": delivery or secrets.token_hex(6)}
        payload = {**CHECK_RUN_FAILED, "check_run": run}
    body = json.dumps(payload).encode()
    headers = {"X-GitHub-Event": "check_run", "X-Hub-Signature-256": sign(secret, body)}
    if delivery is not None:
        headers["X-GitHub-Delivery"] = delivery
    response = Client().post(
        f"/hooks/{slug}", data=body, content_type="application/json", headers=headers
    )
    assert response.status_code in (200, 202, 401), response.content
    result: dict[str, Any] = response.json()
    return result


def rule_data(personas: Personas, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "Deploys",
        "endpoint": str(personas.endpoint_a.id),
        "queue": "deploy",
        "match": json.dumps({"headers": {"X-GitHub-Event": "deployment"}}),
        "title_template": "Deploy {{ deployment.ref }}",
        "work_order_template": "Watch it.",
        "max_attempts": "4",
        "position": "",
        "enabled": "on",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def group(pattern: str, text: str) -> str:
    """The first group of ``pattern``'s first match in ``text``; fail the test if none."""
    found = re.search(pattern, text, re.S)
    assert found is not None, pattern
    return found[1]


def secrets_in(body: str) -> set[str]:
    return set(SECRET_RE.findall(body))


# --- the list ------------------------------------------------------------------------------


def test_the_list_shows_each_source_with_rules_recent_events_and_the_last_disposition(
    alice_client: Client, personas: Personas
) -> None:
    source = github_source(personas)
    never = {"headers": {"X-Never": "sent"}}
    RuleFactory(source=source, endpoint=personas.endpoint_a, queue="other", match=never)
    SourceFactory(owner=personas.alice, slug="quiet", verify=False, secret="")
    SourceFactory(owner=personas.bob, slug="bobs-hooks")
    deliver("github", delivery="old")
    with connection.cursor() as cur:  # a delivery from two days ago: not in the last 24 h
        cur.execute("UPDATE events SET received_at = now() - interval '2 days'")
    deliver("github", delivery="d-1")
    deliver("github", {"action": "opened"}, delivery="d-2")  # matches nothing: dropped

    response = alice_client.get(reverse("sources"))

    rows = {s.slug: s for s in response.context["sources"]}
    assert set(rows) == {"github", "quiet"}
    github, quiet = rows["github"], rows["quiet"]
    assert (github.rule_count, github.events_24h, github.last_disposition) == (2, 2, "dropped")
    assert (quiet.rule_count, quiet.events_24h, quiet.last_event_at) == (0, 0, None)
    body = response.content.decode()
    assert 'href="/sources/github"' in body and "bobs-hooks" not in body
    assert "not verified</span>" in body and "dropped</span>" in body
    assert 'href="/sources/new"' in body


def test_the_list_makes_the_same_queries_for_1_and_10_sources(
    alice_client: Client,
    personas: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    github_source(personas)
    deliver("github")
    # session, user, the sources with their counts and last event (correlated subqueries),
    # the rail's unread count
    with django_assert_num_queries(4):
        alice_client.get(reverse("sources"))
    for n in range(9):
        source = SourceFactory(owner=personas.alice, slug=f"s-{n}", secret=SECRET)
        RuleFactory(source=source, endpoint=personas.endpoint_a)
        deliver(source.slug)
    with django_assert_num_queries(4):
        body = alice_client.get(reverse("sources")).content.decode()
    assert body.count('<tr class="row">') == 10


# --- creation: the secret shown once -------------------------------------------------------


def create(client: Client, slug: str = "github", **extra: Any) -> Any:
    data = {"slug": slug, "name": "GitHub", "verify": "on", **extra}
    return client.post(
        reverse("source_new"), {k: v for k, v in data.items() if v is not None}, follow=True
    )


def test_the_form_verifies_signatures_by_default(alice_client: Client) -> None:
    body = alice_client.get(reverse("source_new")).content.decode()

    assert re.search(r'name="verify"[^>]* checked', body)


def test_creating_a_source_shows_its_secret_url_curl_and_github_settings_once(
    alice_client: Client, personas: Personas
) -> None:
    response = create(alice_client)

    body = response.content.decode()
    assert response.status_code == 200
    (secret,) = secrets_in(body)
    source = Source.objects.get(slug="github")
    assert (source.owner_id, source.name, source.verify) == (personas.alice.id, "GitHub", True)
    assert source.secret == secret
    assert "http://testserver/hooks/github" in body
    for github_setting in ("Payload URL", "Content type", "application/json", "Secret"):
        assert github_setting in body
    curl = html.unescape(body)
    assert "openssl dgst -sha256 -hmac" in curl and "printf" in curl
    assert "curl -sS http://testserver/hooks/github" in curl
    assert "no-store" in response["Cache-Control"]
    assert response["Referrer-Policy"] == "no-referrer"


def test_the_secret_is_never_shown_again_and_a_reload_does_not_show_it(
    alice_client: Client,
) -> None:
    (secret,) = secrets_in(create(alice_client).content.decode())

    reload = create(alice_client)  # the POST again (the page itself was a GET: see below)
    shown_again = alice_client.get(reverse("source_secret_shown", args=["github"]), follow=True)
    assert "shown only once" in shown_again.content.decode()
    pages = [
        reload,
        shown_again,
        alice_client.get(reverse("source_detail", args=["github"])),
        alice_client.get(reverse("sources")),
        alice_client.get(reverse("source_test", args=["github"])),
    ]

    assert reload.status_code == 200 and "exists" in reload.content.decode()
    for page in pages:
        body = page.content.decode()
        assert secret not in body and not secrets_in(body)
    assert Source.objects.get(slug="github").secret == secret


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_the_curl_example_signs_the_body_as_intake_verifies_it(alice_client: Client) -> None:
    body = create(alice_client).content.decode()
    assert "accepted once per source" in body
    snippet = html.unescape(group(r'<pre id="curl">(.*?)</pre>', body))
    signing = snippet.split("curl -sS")[0] + 'printf "%s\\n%s\\n%s" "$BODY" "$SIG" "$ID"'
    secret = Source.objects.get(slug="github").secret

    # Run twice, as a reader re-runs it: each run is a new delivery, not a duplicate of the
    # first (a signed body is accepted once per source, so the body carries the new id).
    sent = []
    for _ in range(2):
        out = subprocess.run(["bash", "-c", signing], capture_output=True, text=True, check=True)
        example_body, signature, delivery_id = out.stdout.split("\n")
        assert "sha256=" + signature == sign(secret, example_body.encode())
        assert delivery_id in json.loads(example_body)["check_run"]["html_url"]
        headers = {
            "X-GitHub-Event": "check_run",
            "X-GitHub-Delivery": delivery_id,
            "X-Hub-Signature-256": "sha256=" + signature,
        }
        answer = Client().post(
            "/hooks/github", data=example_body, content_type="application/json", headers=headers
        )
        assert answer.status_code == 202, answer.content
        sent.append((example_body, answer.json()["disposition"]))
    assert sent[0][0] != sent[1][0]
    assert [disposition for _, disposition in sent] == ["dropped", "dropped"]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_a_standard_webhooks_source_s_curl_example_signs_as_intake_verifies_it(
    alice_client: Client, personas: Personas
) -> None:
    body = create(alice_client, slug="billing", scheme="standard-webhooks").content.decode()
    source = Source.objects.get(slug="billing")
    assert source.scheme == "standard-webhooks" and source.secret.startswith("whsec_")
    assert "Standard Webhooks" in body and "Payload URL" not in body
    snippet = html.unescape(group(r'<pre id="curl">(.*?)</pre>', body))
    signing = snippet.split("curl -sS")[0] + 'printf "%s\\n%s\\n%s\\n%s" "$BODY" "$ID" "$TS" "$SIG"'

    out = subprocess.run(["bash", "-c", signing], capture_output=True, text=True, check=True)

    example_body, delivery_id, timestamp, signature = out.stdout.split("\n")
    assert delivery_id in json.loads(example_body)["check_run"]["html_url"]
    headers = {
        "webhook-id": delivery_id,
        "webhook-timestamp": timestamp,
        "webhook-signature": "v1," + signature,
    }
    answer = Client().post(
        "/hooks/billing", data=example_body, content_type="application/json", headers=headers
    )
    assert answer.status_code == 202, answer.content
    assert answer.json()["disposition"] == "dropped"


def test_a_source_that_does_not_verify_gets_no_secret(alice_client: Client) -> None:
    response = create(alice_client, verify=None)

    body = response.content.decode()
    source = Source.objects.get(slug="github")
    assert (source.verify, source.secret) == (False, "")
    assert not secrets_in(body) and "does not verify signatures" in body
    assert "http://testserver/hooks/github" in body and "openssl" not in body


@pytest.mark.parametrize(
    ("slug", "error"), [("new", "reserved"), ("bobs-hooks", "exists"), ("Not A Slug", "slug")]
)
def test_a_reserved_taken_or_malformed_slug_is_refused_on_the_form(
    alice_client: Client, personas: Personas, slug: str, error: str
) -> None:
    SourceFactory(owner=personas.bob, slug="bobs-hooks")

    response = create(alice_client, slug=slug)

    body = response.content.decode()
    assert response.status_code == 200
    assert error in body and ('class="errorlist' in body or 'role="alert"' in body)
    assert not secrets_in(body)
    assert not Source.objects.filter(owner=personas.alice).exists()


# --- rotation and verification -------------------------------------------------------------


def rotate_form(client: Client, slug: str = "github") -> dict[str, str]:
    page = client.get(reverse("source_detail", args=[slug])).content.decode()
    return {"current": group(r'name="current" value="([0-9a-f]+)"', page), "confirm": "yes"}


def test_rotating_shows_the_new_secret_once_and_the_old_one_stops_working(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)
    form = rotate_form(alice_client)

    asked = alice_client.post(
        reverse("source_rotate", args=["github"]), {"current": form["current"]}
    )
    assert asked.status_code == 200 and "Yes, rotate the secret" in asked.content.decode()
    assert Source.objects.get(slug="github").secret == SECRET  # asking changes nothing

    response = alice_client.post(reverse("source_rotate", args=["github"]), form, follow=True)

    (secret,) = secrets_in(response.content.decode())
    assert Source.objects.get(slug="github").secret == secret
    assert "no-store" in response["Cache-Control"]
    old = Client().post(
        "/hooks/github",
        data=b"{}",
        content_type="application/json",
        headers={"X-Signature-256": sign(SECRET, b"{}")},
    )
    assert old.status_code == 401
    assert deliver("github", secret=secret)["disposition"] == "routed"


def test_a_replayed_rotation_rotates_nothing_and_shows_no_secret(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)
    form = rotate_form(alice_client)
    (secret,) = secrets_in(
        alice_client.post(
            reverse("source_rotate", args=["github"]), form, follow=True
        ).content.decode()
    )

    replay = alice_client.post(reverse("source_rotate", args=["github"]), form, follow=True)

    body = replay.content.decode()
    assert "already rotated" in body and not secrets_in(body)
    assert Source.objects.get(slug="github").secret == secret


def test_turning_verification_off_and_on_keeps_the_secret_and_shows_it_nowhere(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)

    off = alice_client.post(reverse("source_verify", args=["github"]), {"verify": "off"})
    assert off.status_code == 302
    assert Source.objects.get(slug="github").verify is False
    unsigned = Client().post("/hooks/github", data=b"{}", content_type="application/json")
    assert unsigned.status_code == 202

    on = alice_client.post(reverse("source_verify", args=["github"]), {"verify": "on"}, follow=True)

    body = on.content.decode()
    assert "current secret" in body and not secrets_in(body)
    source = Source.objects.get(slug="github")
    assert (source.verify, source.secret) == (True, SECRET)


def test_verifying_a_source_without_a_secret_mints_one_shown_once(
    alice_client: Client, personas: Personas
) -> None:
    SourceFactory(owner=personas.alice, slug="plain", verify=False, secret="")

    response = alice_client.post(
        reverse("source_verify", args=["plain"]), {"verify": "on"}, follow=True
    )
    replay = alice_client.post(reverse("source_verify", args=["plain"]), {"verify": "on"})

    (secret,) = secrets_in(response.content.decode())
    source = Source.objects.get(slug="plain")
    assert (source.verify, source.secret) == (True, secret)
    assert replay.status_code == 302
    assert not secrets_in(alice_client.get(replay["Location"]).content.decode())


# --- rules ---------------------------------------------------------------------------------


def test_adding_a_rule_appends_it_after_the_last_one(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)

    response = alice_client.post(reverse("rule_new", args=["github"]), rule_data(personas))

    assert response.status_code == 302 and response["Location"] == "/sources/github"
    rule = Rule.objects.get(name="Deploys")
    assert rule.source.slug == "github" and rule.endpoint_id == personas.endpoint_a.id
    assert (rule.queue, rule.max_attempts, rule.position, rule.enabled) == ("deploy", 4, 20, True)
    assert rule.match == {"headers": {"X-GitHub-Event": "deployment"}}
    assert rule.title_template == "Deploy {{ deployment.ref }}"
    page = alice_client.get(response["Location"]).content.decode()
    assert "Added rule “Deploys” at position 20" in page
    rules = page.split("<h2>Rules</h2>")[1]
    assert rules.index("CI failures") < rules.index("Deploys")  # evaluation order


def test_a_rule_added_on_the_board_carries_its_time(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)
    time = {
        "priority": "7",
        "delay_seconds": "30",
        "start_within_seconds": "600",
        "finish_within_seconds": "3600",
        "run_timeout_seconds": "300",
        "dedupe_key_path": "deployment.id",
    }

    response = alice_client.post(reverse("rule_new", args=["github"]), rule_data(personas, **time))

    assert response.status_code == 302
    rule = Rule.objects.get(name="Deploys")
    assert {name: str(getattr(rule, name)) for name in time} == time
    form = alice_client.get(reverse("rule_edit", args=["github", rule.pk])).content.decode()
    assert 'name="run_timeout_seconds" value="300"' in form


def test_the_rule_form_offers_only_the_owners_live_endpoints(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)
    revoked = EndpointFactory(owner=personas.alice, slug="old-agent")
    lifecycle.revoke_endpoint(personas.alice.id, revoked.id)

    body = alice_client.get(reverse("rule_new", args=["github"])).content.decode()

    assert f'value="{personas.endpoint_a.id}"' in body
    assert str(personas.endpoint_b.id) not in body and "agent-b" not in body
    assert str(revoked.id) not in body


@pytest.mark.parametrize(
    ("field", "changes", "message"),
    [
        ("match", {"match": '{"payload": {"action": '}, "The match is not JSON"),
        ("match", {"match": '{"payload": {"action": NaN}}'}, "The match is not JSON"),
        ("match", {"match": '{"payload": {"action": {"like": "x"}}}'}, "unknown operator"),
        ("match", {"match": '{"body": {}}'}, "unknown section"),
        ("match", {"match": '["not", "an", "object"]'}, "must be a JSON object"),
        ("endpoint", {"endpoint": "BOB"}, "Select a valid choice"),
        ("endpoint", {"endpoint": "REVOKED"}, "Select a valid choice"),
        ("queue", {"queue": "q" * 129}, "A queue is 1 to 128 bytes"),
        ("max_attempts", {"max_attempts": "0"}, "Between 1 and 1000."),
        ("position", {"position": "99999999999"}, "less than or equal"),
        ("name", {"name": "a\x00b"}, "Null characters"),
        ("priority", {"priority": "1001"}, "Between -1000 and 1000."),
        ("run_timeout_seconds", {"run_timeout_seconds": "5"}, "between 10 and"),
        ("delay_seconds", {"delay_seconds": "0"}, "A positive number of seconds"),
        # The order of two windows is said with the form's labels, not the todo's fields.
        (
            "start_within_seconds",
            {"start_within_seconds": "600", "finish_within_seconds": "60"},
            "Must not be more than “Finish within seconds” (finish_within_seconds).",
        ),
        (
            "delay_seconds",
            {"delay_seconds": "600", "start_within_seconds": "60"},
            "Must not be more than “Start within seconds” (start_within_seconds).",
        ),
        ("dedupe_key_path", {"dedupe_key_path": "a..b"}, "no empty segments"),
    ],
)
def test_an_invalid_rule_is_refused_with_the_error_at_its_field(
    alice_client: Client, personas: Personas, field: str, changes: dict[str, str], message: str
) -> None:
    github_source(personas)
    revoked = EndpointFactory(owner=personas.alice, slug="old-agent")
    lifecycle.revoke_endpoint(personas.alice.id, revoked.id)
    ids = {"BOB": str(personas.endpoint_b.id), "REVOKED": str(revoked.id)}
    changes = {k: ids.get(v, v) for k, v in changes.items()}

    response = alice_client.post(
        reverse("rule_new", args=["github"]), rule_data(personas, **changes)
    )

    body = html.unescape(response.content.decode())
    assert response.status_code == 200
    errors = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', body, re.S)
    assert errors is not None and message in errors[1]
    assert Rule.objects.count() == 1  # only github_source's


def test_a_bob_endpoint_is_refused_even_past_the_form(personas: Personas) -> None:
    # The form's choices keep bob's endpoint out; Rule.full_clean (through create_rule) is the
    # second wall, for every other way in.
    source = github_source(personas)
    with pytest.raises(ValidationError) as refused:
        sources.create_rule(source, personas.endpoint_b, queue="x")
    assert "endpoint" in refused.value.message_dict


def test_editing_a_rule_keeps_its_position_and_routes_by_the_new_version(
    alice_client: Client, personas: Personas
) -> None:
    source = github_source(personas)
    rule = source.rules.get()

    form = alice_client.get(reverse("rule_edit", args=["github", rule.pk])).content.decode()
    assert "&quot;check_run.conclusion&quot;" in form  # the match as indented JSON
    assert 'value="10"' in form
    response = alice_client.post(
        reverse("rule_edit", args=["github", rule.pk]),
        rule_data(personas, name="CI", queue="ci-2", match="{}", title_template="", position=""),
    )

    assert response.status_code == 302
    rule.refresh_from_db()
    assert (rule.name, rule.queue, rule.match, rule.position) == ("CI", "ci-2", {}, 10)
    assert Todo.objects.get(id=deliver("github")["todo_ids"][0]).queue == "ci-2"


def test_an_invalid_edit_changes_nothing(alice_client: Client, personas: Personas) -> None:
    rule = github_source(personas).rules.get()
    before = Rule.objects.values().get(pk=rule.pk)

    response = alice_client.post(
        reverse("rule_edit", args=["github", rule.pk]),
        rule_data(personas, match='{"payload": {"a": {"exists": "yes"}}}'),
    )

    assert response.status_code == 200
    assert "exists takes true or false" in response.content.decode()
    assert Rule.objects.values().get(pk=rule.pk) == before


def test_deleting_a_rule_asks_first(alice_client: Client, personas: Personas) -> None:
    rule = github_source(personas).rules.get()

    confirm = alice_client.get(reverse("rule_delete", args=["github", rule.pk]))
    assert "Delete rule “CI failures”?" in confirm.content.decode()
    assert Rule.objects.filter(pk=rule.pk).exists()

    done = alice_client.post(reverse("rule_delete", args=["github", rule.pk]), follow=True)

    assert "Deleted rule “CI failures”" in done.content.decode()
    assert not Rule.objects.filter(pk=rule.pk).exists()


def test_an_unnamed_rule_is_named_by_its_position_everywhere(
    alice_client: Client, personas: Personas
) -> None:
    """As the source page numbers rules (#20) and ``create_rule`` prints them, with the id that
    tells apart two rules at one position, never by the id alone."""
    source = github_source(personas)
    rule = RuleFactory(
        source=source, endpoint=personas.endpoint_a, queue="all", position=20, match={}
    )
    assert rule.pk != 20
    by_id = re.compile(rf"rule {rule.pk}\b")

    said = [
        str(rule),
        alice_client.get(reverse("rule_edit", args=["github", rule.pk])).content.decode(),
        alice_client.get(reverse("rule_delete", args=["github", rule.pk])).content.decode(),
        run_tester(alice_client, "X-GitHub-Event: check_run", CHECK_RUN_FAILED),
        html.unescape(
            alice_client.post(
                reverse("rule_disable", args=["github", rule.pk]), follow=True
            ).content.decode()
        ),
    ]

    called = f"rule #20 (id {rule.pk})"
    assert said[0] == called
    assert f"<title>Edit {called} · github" in said[1] and f"Edit {called}</h1>" in said[1]
    assert f"<title>Delete {called} · github" in said[2] and f"Delete {called}?</h1>" in said[2]
    assert f"<td>{called}</td>" in said[3]
    assert f"Disabled {called}." in said[4]
    assert not any(by_id.search(text) for text in said)
    added = alice_client.post(
        reverse("rule_new", args=["github"]), rule_data(personas, name=""), follow=True
    )
    new = source.rules.get(position=30)
    assert f"Added rule #30 (id {new.pk})." in html.unescape(added.content.decode())


def test_two_unnamed_rules_at_one_position_are_told_apart_by_their_ids(
    alice_client: Client, personas: Personas
) -> None:
    source = github_source(personas)
    first, second = (
        RuleFactory(source=source, endpoint=personas.endpoint_a, queue=q, position=0, match={})
        for q in ("a", "b")
    )

    deleted = alice_client.post(reverse("rule_delete", args=["github", second.pk]), follow=True)

    assert str(first) != str(second)
    assert f"Deleted rule #0 (id {second.pk})." in html.unescape(deleted.content.decode())


def test_a_disabled_rule_is_skipped_and_can_be_enabled_again(
    alice_client: Client, personas: Personas
) -> None:
    rule = github_source(personas).rules.get()

    alice_client.post(reverse("rule_disable", args=["github", rule.pk]))
    rule.refresh_from_db()
    assert rule.enabled is False
    assert deliver("github")["disposition"] == "dropped"
    page = alice_client.get(reverse("source_detail", args=["github"])).content.decode()
    assert "skipped: disabled" in page and "disabled</span>" in page

    alice_client.post(reverse("rule_enable", args=["github", rule.pk]))
    rule.refresh_from_db()
    assert rule.enabled is True
    assert deliver("github")["disposition"] == "routed"


# --- the source page: rules, events ---------------------------------------------------------


def test_the_source_page_shows_its_url_verification_and_rules_in_order(
    alice_client: Client, personas: Personas
) -> None:
    source = github_source(personas)
    RuleFactory(source=source, endpoint=personas.endpoint_a, name="First", queue="q0", position=1)

    body = alice_client.get(reverse("source_detail", args=["github"])).content.decode()

    assert "http://testserver/hooks/github" in body and "verified</span>" in body
    assert body.index("First") < body.index("CI failures")
    assert "&quot;X-GitHub-Event&quot;: &quot;check_run&quot;" in body
    assert "Fix {{ check_run.name }} on {{ repository.full_name }}" in body
    assert SECRET not in body


def test_a_delivered_event_shows_with_its_todo_and_its_routing_trace(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)
    routed = deliver("github", delivery="gh-delivery-1")
    deliver("github", secret="wrong", delivery="gh-delivery-2")

    body = html.unescape(
        alice_client.get(reverse("source_detail", args=["github"])).content.decode()
    )

    (todo_id,) = routed["todo_ids"]
    assert "gh-delivery-1" in body and "routed</span>" in body and "valid</span>" in body
    assert f'href="/todos/{todo_id}"' in body
    assert "mismatch</span>" in body and "rejected</span>" in body
    # the trace: the rule matched, each condition with its expected and actual value
    assert "#10 CI failures" in body and "agent-a / ci-fix" in body
    assert "payload check_run.conclusion" in body
    assert 'in ["failure", "timed_out"]' in body and '"failure"' in body and "✓ ok" in body
    assert "Missing template fields (rendered empty): " in body and "check_run.runner" in body


def test_the_event_page_shows_the_headers_and_payload_without_secrets(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)
    event_id = deliver("github", CHECK_RUN_FAILED, delivery="d-1")["event_id"]
    signature = sign(SECRET, json.dumps(CHECK_RUN_FAILED).encode())

    body = alice_client.get(reverse("source_event", args=["github", event_id])).content.decode()

    headers = body.split("<h2>Headers</h2>")[1].split("<h2>")[0]
    assert "x-github-event" in headers and "x-hub-signature-256" not in headers
    assert "test (3.12)" in body and "valid</span>" in body
    assert signature not in body and signature.removeprefix("sha256=") not in body


def test_a_rejected_event_s_page_shows_its_body_s_size_and_digest_not_its_payload(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)
    event_id = deliver("github", CHECK_RUN_FAILED, secret="wrong")["event_id"]
    sent = json.dumps(CHECK_RUN_FAILED).encode()

    body = alice_client.get(reverse("source_event", args=["github", event_id])).content.decode()

    assert "<h2>Body</h2>" in body and "<h2>Payload</h2>" not in body
    assert f"{len(sent)} bytes" in body and hashlib.sha256(sent).hexdigest() in body
    assert "rejected</span>" in body


def test_the_source_page_makes_the_same_queries_for_1_and_20_events(
    alice_client: Client,
    personas: Personas,
    django_assert_num_queries: Callable[..., Any],
) -> None:
    source = github_source(personas)
    deliver("github")
    # session, user, the source, its rules with their endpoints, its events with their todo
    # ids, the rail's unread count
    with django_assert_num_queries(6):
        alice_client.get(reverse("source_detail", args=["github"]))
    RuleFactory(source=source, endpoint=personas.endpoint_a, queue="also", position=20)
    for n in range(25):
        deliver("github", delivery=f"d-{n}")
    with django_assert_num_queries(6):
        body = alice_client.get(reverse("source_detail", args=["github"])).content.decode()
    assert body.count('<details class="event">') == 20


# --- the rule tester ------------------------------------------------------------------------


def run_tester(client: Client, headers: str, payload: Any, **extra: Any) -> str:
    response = client.post(
        reverse("source_test", args=["github"]),
        {"headers": headers, "payload": json.dumps(payload)},
        **extra,
    )
    assert response.status_code == 200
    return html.unescape(response.content.decode())


def test_the_tester_shows_the_todos_a_delivery_would_create_and_creates_nothing(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)

    body = run_tester(
        alice_client,
        "X-GitHub-Event: check_run\nAuthorization: Bearer sbk_do-not-show\nX-Custom: kept",
        CHECK_RUN_FAILED,
    )

    assert "would create 1 todo." in body
    assert "Fix test (3.12) on example/shop" in body
    assert "See https://ci/1; runner " in body and "check_run.runner" in body
    assert "agent-a / ci-fix" in body and "matched</span>" in body
    result = body.split('id="tester-result"')[1]  # the form keeps what was typed; the result:
    assert "x-custom: kept" in result
    assert "sbk_do-not-show" not in result and "authorization" not in result.lower()
    assert Event.objects.count() == 0 and Todo.objects.count() == 0


def test_the_tester_shows_why_a_delivery_is_dropped(
    alice_client: Client, personas: Personas
) -> None:
    github_source(personas)

    body = run_tester(alice_client, "", {"action": "opened"})

    assert "Dropped:" in body and "no match</span>" in body
    assert "header x-github-event" in body and "missing" in body and "✕ not" in body
    assert re.search(
        r'payload action</td>\s*<td class="mono" data-label="Expected">= "completed"', body
    )
    assert '"opened"' in body
    assert Event.objects.count() == 0 and Todo.objects.count() == 0


def test_a_secret_header_cannot_be_matched_in_the_tester(
    alice_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice, slug="github", secret=SECRET)
    RuleFactory(source=source, endpoint=personas.endpoint_a, match={"headers": {"X-Token": "t"}})

    body = run_tester(alice_client, "X-Token: t", {})

    assert "Dropped:" in body


def test_the_tester_answers_htmx_with_the_result_fragment(
    alice_client: Client, personas: Personas, htmx_headers: dict[str, str]
) -> None:
    github_source(personas)

    body = run_tester(alice_client, "X-GitHub-Event: check_run", CHECK_RUN_FAILED, **htmx_headers)

    assert body.startswith('<div class="tester-result"')
    assert "<html" not in body and "Fix test (3.12) on example/shop" in body


@pytest.mark.parametrize(
    ("headers", "payload", "error"),
    [("not a header line", "{}", "Line 1 is not"), ("", "{not json", "not JSON"), ("", "", "")],
)
def test_the_tester_says_what_is_wrong_with_its_input(
    alice_client: Client, personas: Personas, headers: str, payload: str, error: str
) -> None:
    github_source(personas)

    response = alice_client.post(
        reverse("source_test", args=["github"]),
        {"headers": headers, "payload": payload},
        HTTP_HX_REQUEST="true",
    )

    body = html.unescape(response.content.decode())
    assert response.status_code == 200 and 'role="alert"' in body and error in body
    assert "Routing trace" not in body


# --- escaping and CSRF ---------------------------------------------------------------------


def test_an_attackers_payload_renders_as_inert_text_everywhere(
    alice_client: Client, personas: Personas
) -> None:
    source = github_source(personas)
    RuleFactory(
        source=source,
        endpoint=personas.endpoint_a,
        name=XSS,
        queue="x",
        position=20,
        match={"payload": {"check_run.name": {"prefix": "nope"}, XSS: {"exists": True}}},
    )
    evil = {**CHECK_RUN_FAILED, "check_run": {"name": XSS, "conclusion": "failure"}, XSS: XSS}
    event_id = deliver("github", evil, delivery=XSS)["event_id"]

    pages = [
        alice_client.get(reverse("source_detail", args=["github"])),
        alice_client.get(reverse("source_event", args=["github", event_id])),
        alice_client.post(
            reverse("source_test", args=["github"]),
            {"headers": f"X-GitHub-Event: check_run\nX-Evil: {XSS}", "payload": json.dumps(evil)},
        ),
    ]

    for page in pages:
        body = page.content.decode()
        assert page.status_code == 200
        assert "<script>alert" not in body
        assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in body
    assert "Fix &lt;script&gt;" in pages[2].content.decode()  # the rendered title too


def test_every_post_needs_the_csrf_token(personas: Personas) -> None:
    rule = github_source(personas).rules.get()
    client = Client(enforce_csrf_checks=True)
    client.force_login(personas.alice)
    posts = [
        reverse("source_new"),
        reverse("source_rotate", args=["github"]),
        reverse("source_verify", args=["github"]),
        reverse("source_test", args=["github"]),
        reverse("rule_new", args=["github"]),
        reverse("rule_edit", args=["github", rule.pk]),
        reverse("rule_delete", args=["github", rule.pk]),
        reverse("rule_enable", args=["github", rule.pk]),
        reverse("rule_disable", args=["github", rule.pk]),
    ]
    before = (Source.objects.values().get(slug="github"), Rule.objects.values().get(pk=rule.pk))

    for url in posts:
        assert client.post(url, {"slug": "x", "verify": "off"}).status_code == 403, url

    after = (Source.objects.values().get(slug="github"), Rule.objects.values().get(pk=rule.pk))
    assert after == before and Source.objects.count() == 1
