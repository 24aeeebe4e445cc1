"""Login throttling beyond django-axes' per username-and-address lock.

django-axes (``settings.AXES_*``) locks one username from one address after
``SWITCHBOARD_LOGIN_FAILURE_LIMIT`` failed logins. Guessing spread over many addresses would
never meet that lock, so ``LoginBudgetBackend`` adds a budget per username across all addresses:
``SWITCHBOARD_LOGIN_USERNAME_FAILURE_LIMIT`` failures within the cool-off lock the username
from everywhere until the cool-off has passed since its last failure (or an administrator
removes its attempts in django-admin). The budget is larger than the pair's, so one guesser
cannot lock a person out quickly; its cost is that a distributed guesser can, which is the lesser
harm than an unbounded guess rate on one account.

``locked_out`` is the lockout answer for both: 429 with ``Retry-After`` (the cool-off, in
seconds: the most the client must wait), and the page saying which lock it is.
"""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied
from axes.helpers import get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone


def username_failures(username: str) -> int:
    """Failed logins for ``username`` from any address within the cool-off."""
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    total = AccessAttempt.objects.filter(username=username, attempt_time__gte=since).aggregate(
        n=Sum("failures_since_start")
    )["n"]
    return int(total or 0)


class LoginBudgetBackend(AxesStandaloneBackend):
    """django-axes' lock, then the username's budget across addresses (module docstring)."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().authenticate(request, username=username, password=password, **kwargs)
        limit = settings.SWITCHBOARD_LOGIN_USERNAME_FAILURE_LIMIT
        if request is None or not username or username_failures(username) < limit:
            return None
        request.axes_locked_out = True  # type: ignore[attr-defined]
        request.switchboard_username_locked = True  # type: ignore[attr-defined]
        response_context = kwargs.get("response_context", {})
        response_context["error"] = "Too many failed logins for this username."
        raise AxesBackendPermissionDenied("username budget spent")


def locked_out(
    request: HttpRequest, original_response: HttpResponse | None, credentials: Any = None
) -> HttpResponse:
    """The lockout page, 429 with ``Retry-After``."""
    cool_off = settings.AXES_COOLOFF_TIME
    context = {
        "failure_limit": get_failure_limit(request, credentials),
        "username_limit": settings.SWITCHBOARD_LOGIN_USERNAME_FAILURE_LIMIT,
        "whole_username": bool(getattr(request, "switchboard_username_locked", False)),
        "cooloff_timedelta": cool_off,
    }
    response = render(request, settings.AXES_LOCKOUT_TEMPLATE, context, status=429)
    response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
