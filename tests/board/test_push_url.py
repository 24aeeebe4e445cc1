"""Push URLs checked as the sender checks them (switchboard/lib/webhook_out.py): the vend form,
the endpoint page's push URL form and ``create_endpoint --push-url`` refuse an inside address
and name the setting that allows it; with it set they take it. The push URL is editable on the
endpoint page, and its first one shows its push secret once."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from switchboard.lib import webhook_out
from switchboard.models import DRAIN_VERBS, Endpoint
from tests.base import Personas

pytestmark = pytest.mark.django_db

LOCAL = "http://127.0.0.1:9911/ring"
SETTING = "SWITCHBOARD_PUSH_ALLOW_PRIVATE"
PUSH_SECRET_RE = re.compile(r"sbp_[A-Za-z0-9_-]{43}")


@pytest.fixture(autouse=True)
def _production_guard(settings: Any) -> None:
    """The default a server runs with (the test settings allow inside addresses)."""
    settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE = False


def vend(client: Client, **extra: object) -> Any:
    data: dict[str, object] = {"name": "Local", "slug": "local", "verbs": list(DRAIN_VERBS)}
    return client.post(reverse("endpoint_new"), data | extra, follow=True)


def set_url(client: Client, slug: str, url: str) -> str:
    response = client.post(
        reverse("endpoint_push_url", args=[slug]), {"push_url": url}, follow=True
    )
    assert response.status_code == 200
    return response.content.decode()


def test_the_vend_form_refuses_a_loopback_url_naming_the_setting(
    alice_client: Client, settings: Any
) -> None:
    body = vend(alice_client, push_url=LOCAL).content.decode()
    assert SETTING in body and "loopback" in body
    assert not Endpoint.objects.filter(slug="local").exists()
    assert (
        "http:// or https://" in vend(alice_client, push_url="ftp://x.example/r").content.decode()
    )
    # Credentials in the URL, on a public address literal: refused for them alone.
    body = vend(alice_client, push_url="https://user:pw@8.8.8.8/ring").content.decode()
    assert "must not carry a user name or password" in body
    assert not Endpoint.objects.filter(slug="local").exists()

    settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE = True
    vend(alice_client, push_url=LOCAL)
    assert Endpoint.objects.get(slug="local").push_url == LOCAL


def test_the_endpoint_page_edits_the_push_url(
    alice_client: Client, bob_client: Client, personas: Personas, settings: Any
) -> None:
    slug = personas.endpoint_a.slug
    page = alice_client.get(reverse("endpoint_detail", args=[slug])).content.decode()
    assert reverse("endpoint_push_url", args=[slug]) in page and SETTING in page

    refused = set_url(alice_client, slug, LOCAL)
    assert "Push URL not changed" in refused and SETTING in refused
    assert Endpoint.objects.get(slug=slug).push_url is None

    # The first URL mints the push secret, shown this once.
    shown = set_url(alice_client, slug, "https://agent.example/ring")
    endpoint = Endpoint.objects.get(slug=slug)
    assert endpoint.push_url == "https://agent.example/ring"
    assert PUSH_SECRET_RE.findall(shown) == [endpoint.push_secret]

    settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE = True
    changed = set_url(alice_client, slug, LOCAL)
    assert Endpoint.objects.get(slug=slug).push_url == LOCAL
    assert not PUSH_SECRET_RE.search(changed)  # the secret is kept, not shown again
    assert Endpoint.objects.get(slug=slug).push_secret == endpoint.push_secret
    assert "no longer pushes" in set_url(alice_client, slug, "")
    assert Endpoint.objects.get(slug=slug).push_url is None

    # Another owner's endpoint is not found, and nothing changes.
    response = bob_client.post(reverse("endpoint_push_url", args=[slug]), {"push_url": LOCAL})
    assert response.status_code == 404
    assert Endpoint.objects.get(slug=slug).push_url is None


def test_create_endpoint_takes_a_push_url_checked_as_the_sender_does(
    personas: Personas, settings: Any
) -> None:
    args = ["--owner", "alice", "--slug", "pusher", "--push-url"]
    with pytest.raises(CommandError, match=SETTING) as refused:
        call_command("create_endpoint", *args, LOCAL, stdout=io.StringIO(), stderr=io.StringIO())
    # The command checks in its own process, so the refusal says to set it for commands too.
    assert "in the environment of the server and of manage.py commands" in str(refused.value)
    assert not Endpoint.objects.filter(slug="pusher").exists()
    settings.SWITCHBOARD_PUSH_ALLOW_PRIVATE = True
    out, err = io.StringIO(), io.StringIO()
    call_command("create_endpoint", *args, LOCAL, stdout=out, stderr=err)
    endpoint = Endpoint.objects.get(slug="pusher")
    assert endpoint.push_url == LOCAL
    assert out.getvalue().startswith("sbk_")
    assert endpoint.push_secret in err.getvalue()


def test_the_senders_refusal_names_the_setting_too() -> None:
    with pytest.raises(webhook_out.TargetRefused, match=SETTING) as refused:
        webhook_out.resolve(LOCAL, allow_private=False)
    assert refused.value.kind == "private"
    # A host that does not resolve now is the sender's to retry, not the form's to refuse.
    webhook_out.check("https://nowhere.invalid/ring", allow_private=False)
