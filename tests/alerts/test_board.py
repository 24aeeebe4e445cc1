"""Alert channels on the Board (the bell's page), with Django's test client: add a webhook or
email channel through the one writer (the push rings' SSRF guard, a refused inside address
naming the setting), its signing secret shown once, the channels listed with their rules in a
fixed number of queries, "send test alert" throttled and behind the breaker, disable and delete
with a confirmation, and bob seeing and touching none of alice's channels."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from alerts import channels, deliver
from alerts.models import AlertChannel, AlertDelivery, RuleKind
from switchboard import teams
from switchboard.lib.sql import fetch_all
from tests.alerts.conftest import Receiver
from tests.base import Personas

SETTING = "SWITCHBOARD_PUSH_ALLOW_PRIVATE"
SECRET_RE = re.compile(r"whsec_[A-Za-z0-9+/=]{20,}")
DEFAULTS = ["dead_letter", "deadline_missed", "budget_warning", "budget_exceeded"]


@pytest.fixture
def alice(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.alice)
    return client


@pytest.fixture
def bob(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.bob)
    return client


def add(client: Client, kind: str, target: str, name: str = "") -> Any:
    return client.post(reverse("alert_channel_add"), {"kind": kind, "target": target, "name": name})


def messages_of(channel: AlertChannel) -> list[tuple[str, str]]:
    rows = AlertDelivery.objects.filter(channel=channel).order_by("id")
    return [(d.message, d.state) for d in rows]


def send_test(client: Client, channel: AlertChannel) -> str:
    response = client.post(reverse("alert_channel_test", args=[channel.pk]), follow=True)
    assert response.status_code == 200
    return str(response.content.decode())


@pytest.mark.django_db
def test_a_webhook_channel_added_on_the_board_shows_its_secret_once(
    alice: Client, personas: Personas, settings: Any
) -> None:
    settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE = True
    response = add(alice, "webhook", "http://127.0.0.1:9/hook", name="ops room")

    channel = AlertChannel.objects.get(owner=personas.alice)
    assert response.status_code == 302
    assert response["Location"] == reverse("alert_channel_secret", args=[channel.pk])
    shown = alice.get(response["Location"])
    assert shown.status_code == 200
    assert SECRET_RE.findall(shown.content.decode()) == [channel.secret]
    assert "no-store" in shown["Cache-Control"] and shown["Referrer-Policy"] == "no-referrer"
    again = alice.get(response["Location"], follow=True).content.decode()
    assert channel.secret not in again and "shown only once" in again
    assert (channel.kind, channel.url, channel.name) == (
        "webhook",
        "http://127.0.0.1:9/hook",
        "ops room",
    )
    assert sorted(r.kind for r in channel.rules.all()) == sorted(DEFAULTS)


@pytest.mark.django_db
def test_a_private_webhook_is_refused_naming_the_setting_and_nothing_is_made(
    alice: Client, personas: Personas, settings: Any
) -> None:
    settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE = False
    refused = add(alice, "webhook", "http://127.0.0.1:9/hook")
    assert refused.status_code == 400
    body = refused.content.decode()
    assert SETTING in body and "loopback" in body and 'id="err_target"' in body
    assert 'value="http://127.0.0.1:9/hook"' in body  # the form keeps what was typed

    for kind, target, name, said in [
        ("webhook", "gopher://x.example/", "", "http:// or https://"),
        ("email", "not an address", "", "not an email address"),
        ("sms", "+15550100", "", "a webhook or an email address"),
        ("email", "ops@example.com", "x" * 201, "at most 200 characters"),
        ("email", "ops@example.com", "a\x00b", "control characters"),
        ("email", "ops\x00@example.com", "", "control characters"),
        ("webhook", "", "", "a webhook URL of 1 to 2048 characters"),
    ]:
        response = add(alice, kind, target, name)
        assert response.status_code == 400, (kind, target, name)
        assert said in response.content.decode(), (kind, target, name)
    assert not AlertChannel.objects.exists()


@pytest.mark.django_db
def test_an_email_channel_is_listed_with_its_rules_in_a_fixed_number_of_queries(
    alice: Client, personas: Personas
) -> None:
    response = add(alice, "email", "ops@example.com", name="ops")
    assert response.status_code == 302 and response["Location"] == reverse("alerts")
    ops = AlertChannel.objects.get(owner=personas.alice)
    assert (ops.kind, ops.email, ops.secret) == ("email", "ops@example.com", "")
    channels.add_rule(ops, RuleKind.DEPTH, endpoint=personas.endpoint_a, queue="ci", threshold=5)

    def page() -> tuple[str, int]:
        with CaptureQueriesContext(connection) as queries:
            body = alice.get(reverse("alerts")).content.decode()
        return body, len(queries)

    body, one = page()
    assert "depth on agent-a/ci &gt; 5" in body and "budget_exceeded on all endpoints" in body
    assert reverse("alert_channel_test", args=[ops.pk]) in body
    for n in range(3):
        other, _ = channels.add_channel(personas.alice, email=f"more{n}@example.com")
        channels.queue_test(other)
    body, four = page()
    assert four == one, "the page's queries grow with its channels"
    assert body.count('class="card channel"') == 4


@pytest.mark.django_db(transaction=True)
def test_a_test_alert_is_throttled_refused_behind_an_open_breaker_and_sent_by_the_sweeper(
    alice: Client, personas: Personas, receiver: Receiver
) -> None:
    channel, receiver.secret = channels.add_channel(personas.alice, webhook=receiver.url)

    assert "Test alert queued" in send_test(alice, channel)
    assert "less than 10 s ago" in send_test(alice, channel)  # the button is not a loop
    assert messages_of(channel) == [("test", "queued")]
    assert deliver.send_due().delivered == 1
    assert receiver.verified == [True] and receiver.bodies()[0]["alert"]["message"] == "test"

    fetch_all(
        "INSERT INTO alert_circuits (channel_id, failures, open_until)"
        " VALUES (%(c)s, 5, now() + interval '1 minute') ON CONFLICT (channel_id)"
        " DO UPDATE SET failures = 5, open_until = now() + interval '1 minute'"
        " RETURNING channel_id",
        {"c": channel.pk},
    )
    fetch_all(
        "UPDATE alert_deliveries SET created_at = now() - interval '1 minute' RETURNING 1", {}
    )
    page = send_test(alice, channel)
    assert "circuit breaker is open" in page and "breaker open" in page
    assert messages_of(channel) == [("test", "delivered")]
    # A test queued before the breaker opened waits behind it too, as a push test ring does.
    channels.queue_test(channel, guarded=False)
    assert deliver.send_due().delivered == 0 and len(receiver.received) == 1


@pytest.mark.django_db
def test_a_channel_is_disabled_and_enabled_again_and_deleted_after_confirming(
    alice: Client, personas: Personas
) -> None:
    channel, _ = channels.add_channel(personas.alice, email="ops@example.com")
    channels.queue_test(channel)
    switch = reverse("alert_channel_enabled", args=[channel.pk])

    alice.post(switch, {"enabled": "no"})
    channel.refresh_from_db()
    assert not channel.enabled
    # What was still queued is not sent once the channel is off.
    assert messages_of(channel) == [("test", "failed")]
    assert "is disabled" in send_test(alice, channel) and len(messages_of(channel)) == 1
    assert "Enable" in alice.get(reverse("alerts")).content.decode()
    assert alice.post(switch, {"enabled": "maybe"}).status_code == 400
    alice.post(switch, {"enabled": "yes"})
    channel.refresh_from_db()
    assert channel.enabled

    delete = reverse("alert_channel_delete", args=[channel.pk])
    asked = alice.post(delete)  # the list's button: the question, nothing deleted
    assert asked.status_code == 200 and "Yes, delete the channel" in asked.content.decode()
    assert AlertChannel.objects.filter(pk=channel.pk).exists()
    done = alice.post(delete, {"confirm": "yes"}, follow=True).content.decode()
    assert "Deleted the channel" in done
    assert not AlertChannel.objects.filter(pk=channel.pk).exists()


@pytest.mark.django_db
def test_bob_can_neither_see_nor_act_on_alices_channels(
    alice: Client, bob: Client, personas: Personas
) -> None:
    hers, _ = channels.add_channel(personas.alice, email="alice@example.com", name="alice ops")
    before = (hers.enabled, hers.name, list(hers.rules.values_list("id", flat=True)))

    page = bob.get(reverse("alerts")).content.decode()
    assert str(hers.pk) not in page and "alice ops" not in page
    for name, data in [
        ("alert_channel_test", {}),
        ("alert_channel_enabled", {"enabled": "no"}),
        ("alert_channel_delete", {"confirm": "yes"}),
    ]:
        assert bob.post(reverse(name, args=[hers.pk]), data).status_code == 404, name
    assert bob.get(reverse("alert_channel_delete", args=[hers.pk])).status_code == 404
    assert bob.get(reverse("alert_channel_secret", args=[hers.pk])).status_code == 404
    for unknown in ["nope", "00000000-0000-0000-0000-000000000007"]:
        assert bob.post(reverse("alert_channel_test", args=[unknown])).status_code == 404

    hers.refresh_from_db()
    assert (hers.enabled, hers.name, list(hers.rules.values_list("id", flat=True))) == before
    assert messages_of(hers) == []
    assert str(hers.pk) in alice.get(reverse("alerts")).content.decode()


@pytest.mark.django_db
def test_a_channel_made_for_a_team_or_moved_into_one_is_its_members_and_no_one_elses(
    alice: Client, bob: Client, personas: Personas
) -> None:
    ops = teams.create_team("ops", personas.alice)  # alice administers ops
    teams.create_team("bobs", personas.bob)

    # Only a team alice administers is offered, and another team is refused by name.
    page = alice.get(reverse("alerts")).content.decode()
    assert 'value="ops"' in page and 'value="bobs"' not in page
    refused = alice.post(
        reverse("alert_channel_add"),
        {"kind": "email", "target": "x@example.com", "owned_by": "bobs"},
    )
    assert refused.status_code == 400 and "a team you administer" in refused.content.decode()
    assert not AlertChannel.objects.exists()

    made = alice.post(
        reverse("alert_channel_add"),
        {"kind": "email", "target": "ops@example.com", "name": "ops mail", "owned_by": "ops"},
        follow=True,
    )
    assert "team ops" in made.content.decode()
    channel = AlertChannel.objects.get(name="ops mail")
    assert (channel.owner_id, channel.team_id) == (None, ops.pk)

    # Bob joins ops: he sees the channel and may act on it; before, he got 404.
    assert bob.post(reverse("alert_channel_test", args=[channel.pk])).status_code == 404
    teams.add_member(ops, personas.bob)
    assert "ops mail" in bob.get(reverse("alerts")).content.decode()
    assert bob.post(reverse("alert_channel_test", args=[channel.pk])).status_code == 302

    # Alice's own channel: bob cannot see it to move it, alice cannot give it to a team she does
    # not administer, and moves it into ops.
    mine, _ = channels.add_channel(personas.alice, email="alice@example.com", name="mine")
    move = reverse("alert_channel_move", args=[mine.pk])
    assert bob.post(move, {"team": "bobs"}).status_code == 404  # not his to see
    assert bob.get(move, {"team": "bobs"}).status_code == 404
    # Not hers to give: refused as before, asked or confirmed, and never a question.
    for refused in (
        alice.post(move, {"team": "bobs"}, follow=True),
        alice.get(move, {"team": "bobs"}, follow=True),
        alice.post(move, {"team": "bobs", "confirm": "yes"}, follow=True),
    ):
        assert refused.redirect_chain == [(reverse("alerts"), 302)]
        assert "Not moved: alice does not administer team bobs" in refused.content.decode()
    mine.refresh_from_db()
    assert (mine.owner_id, mine.team_id) == (personas.alice.pk, None)

    # The list's button (a POST without confirm) and a GET ask, saying what moves and to whom.
    narrowed = mine.rules.first()
    assert narrowed is not None
    narrowed.endpoint = personas.endpoint_a  # alice's own: the team's channel will not hear it
    narrowed.save(update_fields=["endpoint"])
    for asked in (alice.post(move, {"team": "ops"}), alice.get(move, {"team": "ops"})):
        assert asked.status_code == 200
        said = " ".join(html.unescape(re.sub(r"<[^>]+>", "", asked.content.decode())).split())
        assert "Move the channel “mine” to team ops?" in said
        assert f"its {mine.rules.count()} rules" in said and "alice@example.com" in said
        assert "Every member of team ops then sees and manages it" in said and "alice, bob" in said
        assert "hear about team ops's endpoints only, no longer about alice's own" in said
        assert "1 rule narrowed to an endpoint team ops does not own hears nothing" in said
        assert str(narrowed) in said
        assert "It cannot be moved back to a person" in said
        mine.refresh_from_db()
        assert (mine.owner_id, mine.team_id) == (personas.alice.pk, None)

    alice.post(move, {"team": "ops", "confirm": "yes"})
    mine.refresh_from_db()
    assert (mine.owner_id, mine.team_id) == (None, ops.pk)


@pytest.mark.django_db
def test_a_webhook_channels_secret_is_rotated_after_confirming_and_shown_once(
    alice: Client, bob: Client, personas: Personas, receiver: Receiver
) -> None:
    channel, old = channels.add_channel(personas.alice, webhook=receiver.url)
    queued = channels.queue_test(channel, guarded=False)  # queued before the rotation
    rotate = reverse("alert_channel_rotate", args=[channel.pk])
    assert "Rotate secret…" in alice.get(reverse("alerts")).content.decode()

    assert bob.post(rotate).status_code == 404
    asked = alice.post(rotate)  # the list's button: the question, nothing rotated
    assert asked.status_code == 200 and "Yes, rotate the secret" in asked.content.decode()
    current = re.search(r'name="current" value="([0-9a-f]+)"', asked.content.decode())
    assert current is not None
    channel.refresh_from_db()
    assert channel.secret == old

    done = alice.post(rotate, {"confirm": "yes", "current": current.group(1)})
    assert done["Location"] == reverse("alert_channel_secret", args=[channel.pk])
    channel.refresh_from_db()
    assert channel.secret != old
    shown = alice.get(done["Location"]).content.decode()
    assert SECRET_RE.findall(shown) == [channel.secret]

    # The answer sent again (a reload) rotates nothing and shows no secret.
    again = alice.post(rotate, {"confirm": "yes", "current": current.group(1)}, follow=True)
    assert "already rotated" in again.content.decode()
    new = channel.secret
    channel.refresh_from_db()
    assert channel.secret == new and new not in again.content.decode()

    # What was queued before goes out signed with the new secret.
    receiver.secret = new
    assert deliver.send_due(only=queued.delivery_id).delivered == 1
    assert receiver.verified == [True]


@pytest.mark.django_db
def test_an_email_channel_has_no_secret_to_rotate(alice: Client, personas: Personas) -> None:
    channel, _ = channels.add_channel(personas.alice, email="ops@example.com")
    assert "Rotate secret…" not in alice.get(reverse("alerts")).content.decode()

    page = alice.post(
        reverse("alert_channel_rotate", args=[channel.pk]), {"confirm": "yes"}, follow=True
    )
    assert "has no signing secret" in page.content.decode()
    channel.refresh_from_db()
    assert channel.secret == ""
