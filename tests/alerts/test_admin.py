"""The alerts admin writes channels through alerts.channels: a webhook's secret shown once, a
private target refused at save unless the push setting allows it, rules checked for the owner,
and its test action refused as the Board's button is."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from alerts import channels
from alerts.models import AlertChannel, AlertDelivery, AlertRule
from tests.base import Personas


def form(personas: Personas, **fields: Any) -> dict[str, Any]:
    return {
        "owner": personas.alice.pk,
        "kind": "webhook",
        "name": "ops",
        "url": "",
        "email": "",
        "enabled": "on",
        "rules-TOTAL_FORMS": "0",
        "rules-INITIAL_FORMS": "0",
        "rules-MIN_NUM_FORMS": "0",
        "rules-MAX_NUM_FORMS": "1000",
        **fields,
    }


@pytest.mark.django_db
def test_adding_a_webhook_channel_shows_its_secret_once_with_the_default_rules(
    personas: Personas, admin_client: Client
) -> None:
    response = admin_client.post(
        reverse("admin:alerts_alertchannel_add"), form(personas, url="http://127.0.0.1:9/hook")
    )
    assert response.status_code == 200
    channel = AlertChannel.objects.get()
    assert channel.secret.startswith("whsec_") and channel.secret in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    assert response["Referrer-Policy"] == "no-referrer"
    assert AlertRule.objects.filter(channel=channel).count() == 4
    page = admin_client.get(reverse("admin:alerts_alertchannel_change", args=[channel.pk]))
    assert channel.secret not in page.content.decode()


@pytest.mark.django_db
@override_settings(SWITCHBOARD_PUSH_ALLOW_PRIVATE=False)
def test_a_private_target_and_a_foreign_endpoint_are_refused(
    personas: Personas, admin_client: Client
) -> None:
    response = admin_client.post(
        reverse("admin:alerts_alertchannel_add"), form(personas, url="http://10.1.2.3/hook")
    )
    assert response.status_code == 200 and AlertChannel.objects.count() == 0
    assert "private, loopback or link-local" in response.content.decode()

    admin_client.post(
        reverse("admin:alerts_alertchannel_add"),
        form(personas, kind="email", email="ops@example.com"),
    )
    channel = AlertChannel.objects.get()
    rules = list(channel.rules.order_by("id"))
    data = form(
        personas,
        kind="email",
        email="ops@example.com",
        **{
            "rules-TOTAL_FORMS": str(len(rules) + 1),
            "rules-INITIAL_FORMS": str(len(rules)),
        },
    )
    for i, rule in enumerate(rules):
        data |= {
            f"rules-{i}-id": rule.pk,
            f"rules-{i}-channel": channel.pk,
            f"rules-{i}-kind": rule.kind,
            f"rules-{i}-for_seconds": "0",
            f"rules-{i}-enabled": "on",
        }
    n = len(rules)
    data |= {
        f"rules-{n}-channel": channel.pk,
        f"rules-{n}-kind": "dead_letter",
        f"rules-{n}-endpoint": personas.endpoint_b.pk,
        f"rules-{n}-for_seconds": "0",
        f"rules-{n}-enabled": "on",
    }
    response = admin_client.post(
        reverse("admin:alerts_alertchannel_change", args=[channel.pk]), data
    )
    assert response.status_code == 200
    assert "no endpoint of the channel" in response.content.decode()
    assert channel.rules.count() == n


@pytest.mark.django_db
def test_a_rule_on_its_own_page_is_checked_for_its_channels_owner(
    personas: Personas, admin_client: Client
) -> None:
    admin_client.post(
        reverse("admin:alerts_alertchannel_add"),
        form(personas, kind="email", email="ops@example.com"),
    )
    channel = AlertChannel.objects.get()
    url = reverse("admin:alerts_alertrule_add")
    base = {"channel": channel.pk, "kind": "depth", "for_seconds": "60", "enabled": "on"}

    refused = admin_client.post(url, base | {"endpoint": personas.endpoint_b.pk, "threshold": 5})
    assert "no endpoint of the channel" in refused.content.decode()
    refused = admin_client.post(url, base)
    assert "depth needs a threshold" in refused.content.decode()
    assert channel.rules.count() == 4

    added = admin_client.post(url, base | {"endpoint": personas.endpoint_a.pk, "threshold": 5})
    assert added.status_code == 302
    rule = channel.rules.get(kind="depth")
    assert (rule.endpoint_id, rule.threshold) == (personas.endpoint_a.id, 5)


@pytest.mark.django_db
def test_the_admins_test_action_refuses_as_the_boards_button_does(
    admin_client: Client, personas: Personas
) -> None:
    on, _ = channels.add_channel(personas.alice, email="on@example.com")
    off, _ = channels.add_channel(personas.alice, email="off@example.com")
    channels.update_channel(off, enabled=False)
    changelist = reverse("admin:alerts_alertchannel_changelist")

    def act() -> str:
        response = admin_client.post(
            changelist,
            {"action": "send_test", "_selected_action": [str(on.pk), str(off.pk)]},
            follow=True,
        )
        return str(response.content.decode())

    first = act()
    assert "Test alerts queued for 1 channel(s)" in first and "1 channel(s) refused" in first
    second = act()  # within 10 s of the first: throttled
    assert "Test alerts queued for 0 channel(s)" in second and "2 channel(s) refused" in second
    assert list(AlertDelivery.objects.values_list("channel_id", "message")) == [(on.pk, "test")]


@pytest.mark.django_db
@override_settings(SWITCHBOARD_PUSH_ALLOW_PRIVATE=False)
@pytest.mark.parametrize(
    ("kind", "target", "field", "bad", "said"),
    [
        ("email", "ops@example.com", "email", "bad", "not an email address: 'bad'"),
        ("webhook", "https://93.184.216.34/hook", "url", "http://127.0.0.1/", "private"),
        ("webhook", "https://93.184.216.34/hook", "url", "ftp://x/", "http"),
        ("webhook", "https://93.184.216.34/hook", "url", "", "a webhook URL of 1 to"),
        ("email", "ops@example.com", "name", "ops\x07", "control characters"),
    ],
)
def test_editing_a_channel_checks_its_target_by_its_own_kind(
    personas: Personas,
    admin_client: Client,
    kind: str,
    target: str,
    field: str,
    bad: str,
    said: str,
) -> None:
    """The kind is read-only on edit, so it is not in the form's data: the channel's own kind
    decides which target is checked, and a bad one is said on its field (it was a 500)."""
    if kind == "email":
        channel, _ = channels.add_channel(personas.alice, email=target)
    else:
        channel, _ = channels.add_channel(personas.alice, webhook=target)
    url = reverse("admin:alerts_alertchannel_change", args=[channel.pk])
    data = form(personas, **{"url": channel.url, "email": channel.email, field: bad})
    del data["owner"], data["kind"]

    response = admin_client.post(url, data)

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == [field] and said in errors[field][0]
    channel.refresh_from_db()
    assert (channel.url or channel.email, channel.name) == (target, "")
