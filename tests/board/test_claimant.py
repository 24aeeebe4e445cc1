"""A held todo shows the claimant label its agent sent, where it sent one (the holder's name on
hover), on the list's rows, in the drawer and on the endpoint's claims; else the holder's name."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.base import Personas
from tests.reach import BOT, claimed, reclaim
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db


def test_rows_drawer_and_claims_show_the_claimant_label(
    alice_client: Client, personas: Personas
) -> None:
    labelled = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="ci-bot/run-42").todo
    bare = claimed(personas.endpoint_a.id, "work", owner="worker-9").todo
    assert Todo.objects.get(pk=labelled.id).claimant == "ci-bot/run-42"
    assert Todo.objects.get(pk=bare.id).claimant is None

    label = '<span class="claimant" title="bot-1">ci-bot/run-42</span>'
    page = alice_client.get(reverse("todo_list")).content.decode()
    assert f"held by {label}" in page
    assert "held by worker-9" in page
    drawer = alice_client.get(reverse("todo_detail", args=[labelled.id])).content.decode()
    assert label in drawer
    endpoint = alice_client.get(
        reverse("endpoint_detail", args=[personas.endpoint_a.slug])
    ).content.decode()
    assert label in endpoint and ">worker-9<" in endpoint


def test_a_new_claim_replaces_the_label(personas: Personas) -> None:
    todo = claimed(personas.endpoint_a.id, "work", owner=BOT, claimant="first").todo
    lifecycle.release(personas.endpoint_a.id, todo.id, owner=BOT)
    reclaim(personas.endpoint_a.id, todo.id, owner=BOT)
    assert Todo.objects.get(pk=todo.id).claimant is None
