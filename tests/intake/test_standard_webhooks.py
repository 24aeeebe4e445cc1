"""Standard Webhooks sources (``scheme="standard-webhooks"``): webhook-id, webhook-timestamp and
webhook-signature, verified over real HTTP requests through the hook view (Django's test client)."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from tests.base import Personas
from tests.factories import RuleFactory
from todos.intake import routing, sources
from todos.models import Event, Source, Todo

pytestmark = pytest.mark.django_db

BODY = json.dumps({"type": "invoice.paid", "data": {"id": "in_1"}}).encode()


@pytest.fixture
def source(personas: Personas) -> Source:
    source, _secret = sources.create_source(personas.alice, "billing", scheme="standard-webhooks")
    RuleFactory(source=source, endpoint=personas.endpoint_a, queue="billing", match={})
    return source


def deliver(
    source: Source,
    *,
    body: bytes = BODY,
    delivery: str = "msg_1",
    at: float | None = None,
    secret: str | None = None,
    signature: str | None = None,
    **headers: str,
) -> Any:
    timestamp = int(time.time() if at is None else at)
    if signature is None:
        signature = routing.sign_standard(secret or source.secret, delivery, timestamp, body)
    sent = {
        "webhook-id": delivery,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature,
        **headers,
    }
    return Client().post(
        f"/hooks/{source.slug}", data=body, content_type="application/json", headers=sent
    )


def test_the_spec_s_example_signature_is_reproduced() -> None:
    # The example in the Standard Webhooks specification (standardwebhooks.com).
    assert (
        routing.sign_standard(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            b'{"test": 2432232314}',
        )
        == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    )


def test_a_source_of_the_scheme_gets_a_whsec_secret_and_keeps_the_scheme_on_rotation(
    source: Source,
) -> None:
    assert source.secret.startswith("whsec_")
    assert len(base64.b64decode(source.secret.removeprefix("whsec_"), validate=True)) == 32
    before = source.secret
    rotated = sources.rotate_secret(source)
    assert rotated.startswith("whsec_") and rotated != before
    assert Source.objects.get(pk=source.pk).scheme == "standard-webhooks"


def test_a_signed_delivery_routes_and_its_webhook_id_is_the_delivery_id(source: Source) -> None:
    answer = deliver(source, delivery="msg_abc")

    assert answer.status_code == 202, answer.content
    (event,) = Event.objects.all()
    assert event.delivery_id == "msg_abc"
    assert event.verification["scheme"] == "standard-webhooks"
    assert event.verification["result"] == "valid"
    # The signature is a credential: never stored; the id and the time are.
    assert "webhook-signature" not in event.headers
    assert event.headers["webhook-id"] == "msg_abc"
    assert Todo.objects.get(event=event).queue == "billing"


def test_one_valid_signature_among_several_is_enough(source: Source) -> None:
    now = int(time.time())
    good = routing.sign_standard(source.secret, "msg_1", now, BODY)
    other = routing.sign_standard(
        "whsec_" + base64.b64encode(b"k" * 32).decode(), "msg_1", now, BODY
    )
    signature = f"{other} v1a,c29tZXRoaW5n v1,!!notbase64 {good}"

    assert deliver(source, at=now, signature=signature).status_code == 202


def test_a_replayed_delivery_is_a_duplicate_and_creates_nothing(source: Source) -> None:
    now = time.time()
    first = deliver(source, delivery="msg_r", at=now)
    again = deliver(source, delivery="msg_r", at=now)

    assert first.status_code == 202
    assert again.status_code == 200
    assert again.json()["disposition"] == "duplicate"
    assert again.json()["duplicate_of"] == first.json()["event_id"]
    assert Todo.objects.count() == 1


@override_settings(SWITCHBOARD_HOOK_TIMESTAMP_TOLERANCE_SECONDS=300)
@pytest.mark.parametrize("offset", [-302, 302, -86_400])
def test_a_timestamp_outside_the_window_is_rejected(source: Source, offset: int) -> None:
    answer = deliver(source, at=time.time() + offset)

    assert answer.status_code == 401
    assert answer.json()["error"] == "bad_signature"
    assert "outside the accepted window" in answer.json()["message"]
    (event,) = Event.objects.all()
    assert event.verification["result"] == "timestamp_out_of_window"
    assert event.payload is None and not Todo.objects.exists()


def test_a_timestamp_within_the_window_passes(source: Source) -> None:
    assert deliver(source, at=time.time() - 250).status_code == 202


def test_the_id_and_the_timestamp_are_signed(source: Source) -> None:
    now = int(time.time())
    signature = routing.sign_standard(source.secret, "msg_1", now, BODY)

    other_id = deliver(source, delivery="msg_2", at=now, signature=signature)
    other_time = deliver(source, delivery="msg_1", at=now - 1, signature=signature)

    assert (other_id.status_code, other_time.status_code) == (401, 401)
    assert [e.verification["result"] for e in Event.objects.order_by("id")] == [
        "mismatch",
        "mismatch",
    ]


def test_a_wrong_secret_is_rejected_and_the_body_not_stored(source: Source) -> None:
    answer = deliver(source, secret="whsec_" + base64.b64encode(b"x" * 32).decode())

    assert answer.status_code == 401
    (event,) = Event.objects.all()
    assert event.verification["result"] == "mismatch"
    assert event.payload is None and event.body_size == len(BODY)


@pytest.mark.parametrize(
    ("headers", "result"),
    [
        ({"webhook-signature": ""}, "missing"),
        ({"webhook-id": ""}, "missing"),
        ({"webhook-timestamp": "soon"}, "malformed"),
        ({"webhook-timestamp": "1" * 13}, "malformed"),
        ({"webhook-signature": "v2,abc"}, "malformed"),
        ({"webhook-signature": "sha256=" + "0" * 64}, "malformed"),
    ],
)
def test_missing_and_malformed_headers_are_rejected(
    source: Source, headers: dict[str, str], result: str
) -> None:
    now = int(time.time())
    sent = {
        "webhook-id": "msg_1",
        "webhook-timestamp": str(now),
        "webhook-signature": routing.sign_standard(source.secret, "msg_1", now, BODY),
        **headers,
    }
    answer = Client().post(
        "/hooks/billing", data=BODY, content_type="application/json", headers=sent
    )

    assert answer.status_code == 401
    assert answer["Content-Type"] == "application/json"
    (event,) = Event.objects.all()
    assert event.verification["result"] == result


def test_a_github_signature_does_not_pass_a_standard_source(source: Source) -> None:
    answer = Client().post(
        "/hooks/billing",
        data=BODY,
        content_type="application/json",
        headers={"X-Hub-Signature-256": routing.sign(source.secret, BODY)},
    )

    assert answer.status_code == 401


def test_create_source_takes_the_scheme(personas: Personas, capsys: Any) -> None:
    call_command(
        "create_source", owner=personas.alice.username, slug="svix", scheme="standard-webhooks"
    )

    secret = capsys.readouterr().out.strip()
    assert secret.startswith("whsec_")
    assert Source.objects.get(slug="svix").scheme == "standard-webhooks"
