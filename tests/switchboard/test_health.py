from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_healthz_answers_200_when_the_database_answers(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}
