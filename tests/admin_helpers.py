"""Reading django-admin pages in tests (the ``admin_client`` fixture is in tests/conftest.py)."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.test import Client
from django.urls import reverse


def admin_url(name: str, pk: Any) -> str:
    """The URL of an object's admin page. Ids are quoted as the admin quotes them: a todo id
    like ``td_24…`` would otherwise be read back as ``td$…``."""
    return reverse(name, args=[quote(pk)])


def admin_page(client: Client, url: str, **kwargs: Any) -> str:
    """The page at ``url``, asserting it answered 200."""
    response = client.get(url, **kwargs)
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode()


def admin_messages(response: Any) -> list[str]:
    """The messages a response queued (the test client's response carries its request)."""
    return [str(m) for m in get_messages(response.wsgi_request)]
