"""The rail's unread badge on the Activity item, for every page that draws the rail.

A lazy value: the count (activity.feed.unread_count, one query) is taken the first time a
template reads it, and kept on the request, so a page that never draws the rail (an htmx
fragment, the login page) never pays for it, and one that reads it twice pays once.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from activity import feed

_CACHED = "_sb_activity_unread"


def rail(request: HttpRequest) -> dict[str, Any]:
    """``activity_unread``: the badge's text, "" for nothing new (or nobody logged in)."""
    return {"activity_unread": SimpleLazyObject(lambda: unread_badge(request))}


def unread_badge(request: HttpRequest) -> str:
    """The badge's text for the request's human, counted at most once per request."""
    cached: str | None = getattr(request, _CACHED, None)
    if cached is None:
        user = request.user
        cached = ""
        if user.is_authenticated:
            count = feed.unread_count(user.pk, feed.unread_since(user))
            cached = feed.badge(count)
        setattr(request, _CACHED, cached)
    return cached


def mark_read(request: HttpRequest) -> None:
    """The human has just opened the feed: nothing is unread for the rest of this request."""
    setattr(request, _CACHED, "")
