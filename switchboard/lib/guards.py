"""The Board's view guards: the typed request its views receive, the login guard, the never-cached
answer that shows a secret, the shown-once stash, and the confirmation step."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required as django_login_required
from django.http import HttpRequest
from django.http.response import HttpResponseBase
from django.utils.cache import add_never_cache_headers
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

if TYPE_CHECKING:  # the type only: lib imports no app at run time
    from switchboard.models import Human

type View = Callable[..., HttpResponseBase]


class BoardRequest(HttpRequest):
    """A request behind ``login_required``: ``user`` is a ``Human``; django-htmx adds ``htmx``."""

    htmx: HtmxDetails
    user: Human


def login_required(view: View) -> View:
    """Django's ``login_required``, except that an htmx request whose session has ended sends the
    whole page to the login (and back to that page after it), instead of following the redirect
    and swapping the login form into a fragment's target."""
    guarded = django_login_required(view)

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        htmx = getattr(request, "htmx", None)
        if htmx and not request.user.is_authenticated:
            back = htmx.current_url_abs_path or "/"
            return HttpResponseClientRedirect(f"{settings.LOGIN_URL}?{urlencode({'next': back})}")
        return guarded(request, *args, **kwargs)

    return wrapper


def holds_secret[R: HttpResponseBase](response: R) -> R:
    """Mark a response that shows a secret's plaintext (a key, a webhook secret), shown once: no
    cache may keep it, and no Referer may carry its URL onward."""
    add_never_cache_headers(response)
    response["Referrer-Policy"] = "no-referrer"
    return response


# The plaintext shown once after a POST that minted it (a key, a webhook secret): the POST stashes
# it in the session and redirects; the GET pops it and renders it. A reload finds nothing (the
# form is not posted again, nothing is minted twice) and the secret leaves the session store at
# the first view.
SHOWN_ONCE = "switchboard.shown_once"


def stash_shown_once(request: HttpRequest, kind: str, **values: str | None) -> None:
    """Keep ``values`` for the next :func:`pop_shown_once` of ``kind`` in this session."""
    request.session[SHOWN_ONCE] = {"kind": kind, **values}


def pop_shown_once(request: HttpRequest, kind: str, **match: str) -> dict[str, str | None] | None:
    """Take what :func:`stash_shown_once` kept for ``kind`` (and ``match``), or None."""
    stashed = request.session.get(SHOWN_ONCE)
    if not isinstance(stashed, dict) or stashed.get("kind") != kind:
        return None
    if any(stashed.get(name) != value for name, value in match.items()):
        return None
    del request.session[SHOWN_ONCE]
    return stashed


def confirmed(request: HttpRequest) -> bool:
    """A destructive POST goes ahead only from its confirmation step (``confirm=yes``)."""
    return request.POST.get("confirm") == "yes"
