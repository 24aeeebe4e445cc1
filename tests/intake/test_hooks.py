"""POST /hooks/{slug}: verification, events, routing, idempotency and every bad-input answer."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from django.test import override_settings

from tests.base import Personas
from tests.factories import RuleFactory, SourceFactory
from tests.intake.conftest import CHECK_RUN_FAILED, SECRET, Hook
from todos.intake import deliveries
from todos.intake.routing import sign
from todos.limits import WORK_ORDER_MAX_CHARS
from todos.models import Event, Todo

pytestmark = pytest.mark.django_db


def only_event() -> Event:
    (event,) = Event.objects.all()
    return event


def test_a_signed_github_delivery_routes_to_the_rule_s_queue(hook: Hook, personas: Personas):
    response = hook.post(delivery="d-1")

    assert response.status_code == 202
    body = response.json()
    assert body["disposition"] == "routed"
    (todo_id,) = body["todo_ids"]
    todo = Todo.objects.get(id=todo_id)
    assert (todo.endpoint_id, todo.queue, todo.state) == (
        personas.endpoint_a.id,
        "ci-fix",
        "pending",
    )
    assert todo.max_attempts == 3
    assert todo.title == "Fix test (3.12) on example/shop"
    assert todo.work_order == "The check failed: https://ci/1"
    assert todo.payload == CHECK_RUN_FAILED
    assert todo.event_id == body["event_id"]
    assert todo.routing_trace["rule_id"] == hook.rule.id
    assert todo.routing_trace["matched"] is True
    event = only_event()
    assert event.id == body["event_id"]
    assert event.delivery_id == "d-1"
    assert event.disposition == "routed"
    assert event.verification == {
        "scheme": "hmac-sha256",
        "header": "x-hub-signature-256",
        "result": "valid",
    }
    assert event.routing_trace[0]["todo_id"] == todo_id
    assert all(check["ok"] for check in event.routing_trace[0]["conditions"])


def test_the_x_signature_256_header_is_accepted_too(hook: Hook):
    response = hook.post(header="X-Signature-256")

    assert response.status_code == 202
    assert only_event().verification["header"] == "x-signature-256"


def test_secret_headers_are_not_stored(hook: Hook):
    hook.post(
        Authorization="Bearer sbk_secret",
        Cookie="sessionid=abc",
        X_Gitlab_Token="tok",
        X_Custom="kept",
    )

    headers = only_event().headers
    assert headers["x-custom"] == "kept"
    assert headers["x-github-event"] == "check_run"
    stored = json.dumps(headers).lower()
    for dropped in ("authorization", "cookie", "x-hub-signature-256", "gitlab-token", "sbk_"):
        assert dropped not in stored


def test_a_bad_signature_answers_401_and_stores_a_rejected_event(hook: Hook):
    response = hook.post(secret="not-the-secret", delivery="d-1")

    assert response.status_code == 401
    assert response["Content-Type"] == "application/json"
    assert response.json()["error"] == "bad_signature"
    event = only_event()
    assert response.json()["event_id"] == event.id
    assert event.disposition == "rejected"
    assert event.verification["result"] == "mismatch"
    # Not its body: its size, digest and (here, all of) its first 256 bytes.
    body = json.dumps(CHECK_RUN_FAILED).encode()
    assert event.payload is None
    assert event.body_size == len(body)
    assert event.body_sha256 == hashlib.sha256(body).hexdigest()
    assert event.body_prefix == body.decode()
    assert event.headers["x-github-event"] == "check_run"
    assert "x-hub-signature-256" not in event.headers
    assert event.delivery_id is None
    assert not Todo.objects.exists()


def test_a_rejected_delivery_keeps_only_a_short_escaped_masked_prefix_of_its_body(hook: Hook):
    token = "ghp_" + "A1b2C3d4" * 5
    head = b'{"a": "x\x00y\xe2\x80\xae", "raw": "\xff\xfe", "token": "' + token.encode() + b'"'
    body = head + b', "pad": "' + b"p" * (5 * 1_048_576 - len(head) - 20) + b'"}'

    assert hook.post(body=body, secret="wrong").status_code == 401

    event = only_event()
    assert event.payload is None
    assert event.body_size == len(body)
    assert event.body_sha256 == hashlib.sha256(body).hexdigest()
    prefix = event.body_prefix
    assert prefix.startswith('{"a": "x\\x00y\\u202e", "raw": "\\xff\\xfe", "token": "[redacted')
    assert token not in prefix
    assert "\x00" not in prefix and "\u202e" not in prefix
    assert len(prefix) < 300  # 256 bytes and their escapes; none of the 5 MiB pad


def test_a_rejected_delivery_does_not_hold_its_delivery_id(hook: Hook):
    assert hook.post(secret="wrong", delivery="d-1").status_code == 401

    assert hook.post(delivery="d-1").status_code == 202
    assert Todo.objects.count() == 1


@pytest.mark.parametrize(
    ("signature", "result"),
    [(None, "missing"), ("sha1=abc", "malformed"), ("sha256=zz", "malformed")],
)
def test_a_missing_or_malformed_signature_is_rejected(hook: Hook, signature, result):
    extra = {} if signature is None else {"X-Hub-Signature-256": signature}
    response = hook.post(secret=None, **extra)

    assert response.status_code == 401
    assert only_event().verification["result"] == result


def test_a_rejected_body_that_is_not_json_is_stored_without_payload(hook: Hook):
    response = hook.post(body=b"{nope", secret="wrong")

    assert response.status_code == 401
    assert only_event().payload is None
    assert only_event().body_prefix == "{nope"


def test_a_source_s_rejected_deliveries_past_its_budget_are_429_and_not_stored(hook: Hook):
    spent = iter([None, 7])

    def budget(source_id: int) -> int | None:
        assert source_id == hook.source.id
        return next(spent)

    def deliver() -> Any:
        return deliveries.receive(
            "github",
            b"{}",
            [("X-Hub-Signature-256", sign("wrong", b"{}"))],
            rejected_budget=budget,
        )

    with pytest.raises(deliveries.BadSignature):
        deliver()
    with pytest.raises(deliveries.RejectedTooOften) as refused:
        deliver()

    assert refused.value.status == 429 and refused.value.retry_after == 7
    assert Event.objects.count() == 1


def test_a_body_that_is_not_json_answers_400_and_stores_nothing(hook: Hook):
    for body in (b"{nope", b"\xff\xfe", b'{"a": NaN}', b"[" * 100_000):
        response = hook.post(body=body)
        assert response.status_code == 400, body[:10]
        assert response.json()["error"] == "invalid_json"
    assert not Event.objects.exists()


def test_a_nul_character_in_the_payload_answers_400(hook: Hook):
    response = hook.post(body=b'{"action": "completed\\u0000"}')

    assert response.status_code == 400
    assert "NUL" in response.json()["message"]
    assert not Event.objects.exists()


def test_no_matching_rule_stores_a_dropped_event(hook: Hook):
    response = hook.post({**CHECK_RUN_FAILED, "action": "created"})

    assert response.status_code == 202
    assert response.json()["disposition"] == "dropped"
    assert response.json()["todo_ids"] == []
    (entry,) = only_event().routing_trace
    assert entry["matched"] is False
    failed = [check for check in entry["conditions"] if not check["ok"]]
    assert failed == [
        {
            "on": "payload",
            "key": "action",
            "expect": {"eq": "completed"},
            "found": True,
            "actual": "created",
            "ok": False,
        }
    ]
    assert not Todo.objects.exists()


def test_header_names_match_case_insensitively(hook: Hook):
    response = hook.post(event=None, **{"x-github-event": "check_run"})

    assert response.json()["disposition"] == "routed"


def test_two_matching_rules_make_two_todos(hook: Hook, personas: Personas):
    second = RuleFactory(
        source=hook.source,
        endpoint=personas.endpoint_a,
        queue="triage",
        position=hook.rule.position + 1,
        match={"payload": {"check_run.conclusion": "failure"}},
    )

    response = hook.post()

    assert response.status_code == 202
    todos = Todo.objects.filter(id__in=response.json()["todo_ids"]).order_by("created_at", "id")
    assert sorted(todo.queue for todo in todos) == ["ci-fix", "triage"]
    trace = only_event().routing_trace
    assert [entry["rule_id"] for entry in trace] == [hook.rule.id, second.id]
    # A rule without a title template gets a title that says where it came from.
    assert Todo.objects.get(queue="triage").title == "github: triage"


def test_a_duplicate_delivery_answers_200_and_creates_nothing(hook: Hook):
    first = hook.post(delivery="d-7").json()

    again = hook.post(delivery="d-7")

    assert again.status_code == 200
    body = again.json()
    assert body["disposition"] == "duplicate"
    assert body["todo_ids"] == []
    assert body["duplicate_of"] == first["event_id"]
    assert Todo.objects.count() == 1
    duplicate = Event.objects.get(id=body["event_id"])
    assert duplicate.disposition == "duplicate"
    assert duplicate.routing_trace == [{"duplicate_of": first["event_id"]}]


def test_a_signed_delivery_replayed_under_a_new_delivery_id_is_a_duplicate(hook: Hook):
    """A GitHub signature covers the body alone: the same body under a new X-GitHub-Delivery
    is a captured delivery posted again, not a new event."""
    first = hook.post(delivery="d-10").json()

    replay = hook.post(delivery="d-11")

    assert replay.status_code == 200
    assert replay.json()["disposition"] == "duplicate"
    assert replay.json()["duplicate_of"] == first["event_id"]
    assert Todo.objects.count() == 1
    # Another body is another delivery; an unsigned source keeps no body digest to compare.
    changed = {**CHECK_RUN_FAILED, "check_run": {**CHECK_RUN_FAILED["check_run"], "id": 2}}
    assert hook.post(changed, delivery="d-12").json()["disposition"] == "routed"
    assert Event.objects.filter(disposition="routed", body_sha256__isnull=False).count() == 2


def test_an_unsigned_source_takes_the_same_body_twice(hook: Hook):
    hook.source.verify = False
    hook.source.save(update_fields=["verify"])

    hook.post(delivery="d-13", secret=None)

    assert hook.post(delivery="d-14", secret=None).json()["disposition"] == "routed"


def test_a_dropped_delivery_id_is_a_duplicate_too(hook: Hook):
    hook.post({"action": "created"}, delivery="d-8")

    assert hook.post(delivery="d-8").json()["disposition"] == "duplicate"


def test_the_x_delivery_id_header_is_a_delivery_id(hook: Hook):
    hook.post(X_Delivery_Id="x-1")

    assert hook.post(X_Delivery_Id="x-1").json()["disposition"] == "duplicate"


def test_the_same_delivery_id_on_another_source_is_not_a_duplicate(hook: Hook, personas):
    other = SourceFactory(owner=personas.alice, slug="other", secret=SECRET)
    RuleFactory(source=other, endpoint=personas.endpoint_a, queue="q")
    hook.post(delivery="d-9")

    response = hook.post(delivery="d-9", slug="other")

    assert response.json()["disposition"] == "routed"


def test_an_over_long_delivery_id_answers_400(hook: Hook):
    response = hook.post(delivery="d" * 257)

    assert response.status_code == 400
    assert response.json()["error"] == "invalid_delivery_id"
    assert not Event.objects.exists()


def test_an_unknown_source_answers_404_json(hook: Hook):
    for path in ("/hooks/nope", "/hooks/", "/hooks", "/hooks/a/b"):
        response = hook.client.post(path, data=b"{}", content_type="application/json")
        assert response.status_code == 404, path
        assert response.json()["error"] == "unknown_source"


def test_get_answers_405_json(hook: Hook):
    response = hook.client.get("/hooks/github")

    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert response.json()["error"] == "method_not_allowed"


@override_settings(SWITCHBOARD_HOOK_MAX_BODY_BYTES=2048)
def test_a_body_one_byte_over_the_cap_answers_413(hook: Hook):
    padding = "x" * (2048 - len(json.dumps({"p": ""})))
    at_cap = json.dumps({"p": padding}).encode()
    assert len(at_cap) == 2048

    assert hook.post(body=at_cap).status_code == 202
    response = hook.post(body=at_cap + b" ")

    assert response.status_code == 413
    assert response.json() == {
        "error": "too_large",
        "message": "the body is over the 2048-byte limit",
        "limit": 2048,
    }
    assert Event.objects.count() == 1


def test_a_missing_template_field_renders_empty_and_is_traced(hook: Hook):
    hook.rule.title_template = "Fix {{ check_run.name }} ({{ check_run.app.slug }})"
    hook.rule.save()

    response = hook.post()

    todo = Todo.objects.get(id=response.json()["todo_ids"][0])
    assert todo.title == "Fix test (3.12) ()"
    assert todo.routing_trace["missing_fields"] == ["check_run.app.slug"]
    assert only_event().routing_trace[0]["missing_fields"] == ["check_run.app.slug"]


def test_a_work_order_rendered_past_its_cap_is_cut_and_traced_not_dropped(hook: Hook):
    hook.rule.work_order_template = "Read this: {{ check_run.output.text }}"
    hook.rule.save()
    payload = json.loads(json.dumps(CHECK_RUN_FAILED))
    payload["check_run"]["output"] = {"text": "x" * 70_000}

    response = hook.post(payload)

    assert response.status_code == 202
    todo = Todo.objects.get(id=response.json()["todo_ids"][0])
    assert len(todo.work_order) == WORK_ORDER_MAX_CHARS
    assert todo.work_order.startswith("Read this: xxx")
    assert todo.routing_trace["work_order_cut"] is True


def test_an_unverified_source_takes_unsigned_deliveries(personas: Personas, client):
    source = SourceFactory(owner=personas.alice, slug="open", secret="", verify=False)
    RuleFactory(source=source, endpoint=personas.endpoint_a, queue="q")

    response = client.post("/hooks/open", data=b'{"a": 1}', content_type="application/json")

    assert response.status_code == 202
    assert only_event().verification == {"scheme": "none", "result": "not_required"}


def test_github_form_encoded_deliveries_are_understood(hook: Hook):
    from urllib.parse import urlencode

    body = urlencode({"payload": json.dumps(CHECK_RUN_FAILED)}).encode()

    response = hook.post(body=body, content_type="application/x-www-form-urlencoded")

    assert response.json()["disposition"] == "routed"
    assert only_event().payload == CHECK_RUN_FAILED


def test_a_revoked_endpoint_s_rule_creates_nothing_and_says_why(hook: Hook, personas):
    from django.utils import timezone

    from switchboard.models import Endpoint

    Endpoint.objects.filter(id=personas.endpoint_a.id).update(revoked_at=timezone.now())

    response = hook.post()

    assert response.json()["disposition"] == "dropped"
    assert "revoked" in only_event().routing_trace[0]["error"]


def test_a_rule_pointing_at_a_foreign_endpoint_creates_nothing(hook: Hook, personas):
    # Planted behind the validation (admin and commands refuse it): intake refuses it again.
    from todos.models import Rule

    Rule.objects.filter(id=hook.rule.id).update(endpoint=personas.endpoint_b)

    response = hook.post()

    assert response.json()["disposition"] == "dropped"
    assert not Todo.objects.filter(endpoint=personas.endpoint_b).exists()


def test_disabled_rules_are_traced_as_skipped(hook: Hook):
    hook.rule.enabled = False
    hook.rule.save()

    response = hook.post()

    assert response.json()["disposition"] == "dropped"
    assert only_event().routing_trace[0]["skipped"] == "disabled"
