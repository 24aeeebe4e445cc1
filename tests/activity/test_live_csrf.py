"""The live pages' pushed forms carry a CSRF token Django accepts (activity/live.py).

``_masked_csrf_token`` masks the secret of the socket's CSRF cookie the way
``CsrfViewMiddleware`` does, by putting it where the middleware keeps it (``CSRF_COOKIE`` in
``request.META``) and calling ``get_token``: an internal of Django's CSRF code, pinned with Django's
minor in pyproject.toml (docs/decisions/0025-vendor-boundaries.md). This is its tripwire: a
Django whose middleware keeps the secret elsewhere, or changes its length, fails here rather
than redraw the Board's buttons with tokens every post of which is refused.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.middleware import csrf
from django.test import RequestFactory
from django.utils.crypto import get_random_string

from activity.live import _masked_csrf_token


def _view(request: HttpRequest) -> HttpResponse:
    return HttpResponse()


def _post_refused(cookie: str, token: str | None) -> bool:
    request = RequestFactory().post("/todos/x/cancel", {"csrfmiddlewaretoken": token or ""})
    request.COOKIES[settings.CSRF_COOKIE_NAME] = cookie
    middleware = csrf.CsrfViewMiddleware(_view)
    return middleware.process_view(request, _view, (), {}) is not None


def test_a_pushed_token_posts_with_the_cookie_it_was_made_from() -> None:
    assert csrf.CSRF_SECRET_LENGTH == 32  # the shape _masked_csrf_token accepts
    secret = get_random_string(csrf.CSRF_SECRET_LENGTH, allowed_chars=csrf.CSRF_ALLOWED_CHARS)
    token = _masked_csrf_token(secret)
    assert token is not None and token != secret  # masked, as the first paint's
    assert not _post_refused(secret, token)


def test_a_pushed_token_does_not_post_with_another_cookie() -> None:
    make = lambda: get_random_string(32, allowed_chars=csrf.CSRF_ALLOWED_CHARS)  # noqa: E731
    assert _post_refused(make(), _masked_csrf_token(make()))
    assert _masked_csrf_token("short") is None
