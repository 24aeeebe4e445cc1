"""Typing for the Board's views: the request a logged-in operator's view receives."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from switchboard.models import Human


class BoardRequest(HttpRequest):
    """A request behind ``login_required``: ``user`` is a ``Human``; django-htmx adds ``htmx``."""

    htmx: HtmxDetails
    user: Human
