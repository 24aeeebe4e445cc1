"""The attempts admin: every attempt, filtered by outcome, each row linked to its todo."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.admin_helpers import admin_page, admin_url
from tests.base import Personas
from tests.reach import BOT, claimed
from todos import lifecycle

pytestmark = pytest.mark.django_db


def test_attempts_list_filters_by_outcome_and_links_each_row_to_its_todo(
    admin_client: Client, personas: Personas
) -> None:
    done = claimed(personas.endpoint_a.id, "work", owner=BOT).todo.id
    lifecycle.complete(personas.endpoint_a.id, done, owner=BOT)
    failed = claimed(personas.endpoint_a.id, "work", owner=BOT).todo.id
    lifecycle.fail(personas.endpoint_a.id, failed, owner=BOT)

    html = admin_page(
        admin_client, reverse("admin:attempts_todoattempt_changelist"), data={"outcome": "failed"}
    )

    assert admin_url("admin:todos_todo_change", failed) in html
    assert done not in html
