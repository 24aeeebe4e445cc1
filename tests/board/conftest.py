"""Board fixtures: logged-in clients for the personas."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.base import Personas


@pytest.fixture
def alice_client(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.alice)
    return client


@pytest.fixture
def bob_client(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.bob)
    return client


@pytest.fixture
def htmx_headers() -> dict[str, str]:
    return {"HTTP_HX_REQUEST": "true"}
