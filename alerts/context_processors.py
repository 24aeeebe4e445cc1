"""The rail's bell: how many alerts are open on the human's channels, for every page.

Lazy, as the Activity badge is (``activity/context_processors.py``): counted the first time a
template reads it, once per request, never for a page that draws no rail.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from alerts.models import Alert, AlertState
from switchboard.scope import Scope

_CACHED = "_sb_alerts_open"


def bell(request: HttpRequest) -> dict[str, Any]:
    """``alerts_open``: the bell's count as text, "" for none (or nobody logged in)."""
    return {"alerts_open": SimpleLazyObject(lambda: open_count(request))}


def open_count(request: HttpRequest) -> str:
    cached: str | None = getattr(request, _CACHED, None)
    if cached is None:
        cached = ""
        user = request.user
        if user.is_authenticated:
            count = Alert.objects.filter(
                Scope.of_human(user.pk).owned("channel__owner"), state=AlertState.OPEN
            ).count()
            cached = str(count) if count < 100 else "99+"
            cached = "" if count == 0 else cached
        setattr(request, _CACHED, cached)
    return cached
