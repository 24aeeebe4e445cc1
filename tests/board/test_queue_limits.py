"""The Board's queue limits page (todos.views.queue_limits): shows the limits as they stand,
sets them through the one writer (blank clears), names a refused value beside its field,
refuses another human's queue and a POST without its CSRF token."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse

from tests.base import Personas
from tests.reach import new_todo
from todos import lifecycle
from todos.models import QueueSettings

URL = reverse("queue_action", args=["limits"]) + "?endpoint=agent-a&queue=triage"
BLANK = {"max_in_flight": "", "claims_per_minute": "", "run_timeout_seconds": ""}


def test_the_list_links_to_the_limits_and_the_form_sets_and_clears_them(
    alice_client: Client, personas: Personas
) -> None:
    new_todo(personas.endpoint_a.id, "triage")
    listed = alice_client.get(reverse("todo_list") + "?endpoint=agent-a&queue=triage")
    assert "Limits of triage" in listed.content.decode()

    response = alice_client.post(URL, BLANK | {"max_in_flight": "3", "claims_per_minute": "20"})

    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Set the limits of triage on agent-a."
    ]
    row = QueueSettings.objects.get(endpoint=personas.endpoint_a, queue="triage")
    assert (row.max_in_flight, row.claims_per_minute, row.run_timeout_seconds) == (3, 20, None)
    assert row.updated_by == f"human:{personas.alice.id}"
    shown = alice_client.get(URL).content.decode()
    assert 'name="max_in_flight" value="3"' in shown

    alice_client.post(URL, BLANK | {"claims_per_minute": "20"})
    row.refresh_from_db()
    assert (row.max_in_flight, row.claims_per_minute) == (None, 20)


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("max_in_flight", "-1", "Max in flight: must be between 0 and"),
        ("claims_per_minute", "lots", "Claims per minute: must be a whole number"),
        # Text str.isdigit passes and int refuses: a 500 before.
        ("max_in_flight", "--1", "Max in flight: must be a whole number"),
        ("claims_per_minute", "\u00b2", "Claims per minute: must be a whole number"),
        ("claims_per_minute", "\u0663", "Claims per minute: must be a whole number"),
        ("run_timeout_seconds", "5", "Default run timeout (seconds): must be between 10"),
    ],
)
def test_a_bad_value_is_named_beside_its_field_and_nothing_changes(
    alice_client: Client, personas: Personas, field: str, value: str, said: str
) -> None:
    lifecycle.set_queue_limits(personas.endpoint_a.id, "triage", human_id=None, max_in_flight=2)

    response = alice_client.post(URL, BLANK | {"max_in_flight": "4", field: value})

    assert response.status_code == 400
    page = response.content.decode()
    assert said in page and f'id="err_{field}"' in page
    assert QueueSettings.objects.get().max_in_flight == 2


@pytest.mark.parametrize("zero", ["0e999999999999", "0E-1000000000000000000"])
def test_a_zero_amount_written_with_a_vast_exponent_is_stored_as_zero(
    alice_client: Client, personas: Personas, zero: str
) -> None:
    """Such a zero passed the amount check, and PostgreSQL refused to read the number it was
    sent as: a 500."""
    costs = {"default_max_cost_usd": zero, "daily_budget_usd": ""}

    response = alice_client.post(URL, BLANK | costs)

    assert response.status_code == 302
    assert QueueSettings.objects.get().default_max_cost_usd == Decimal(0)


def test_a_human_cannot_limit_another_humans_queue(bob_client: Client) -> None:
    response = bob_client.post(URL, BLANK | {"max_in_flight": "1"})

    assert response.status_code == 400
    assert not QueueSettings.objects.exists()


def test_a_post_without_its_csrf_token_is_refused(personas: Personas) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(personas.alice)

    response = client.post(URL, BLANK | {"max_in_flight": "1"})

    assert response.status_code == 403
    assert not QueueSettings.objects.exists()
