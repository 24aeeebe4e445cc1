"""Core pages: the health checks and the guarded metrics.

``/healthz`` is liveness as this project has always meant it: the process answers and its
database answers a query. ``/readyz`` is readiness: that, and every migration on disk applied,
so a load balancer sends no traffic to code whose schema is not there yet (an upgrade in
progress, a migrate step that failed).

``server_error`` is the pages' 500 handler: when what failed was the connection to the database
(a restart, a failover), it answers 503 with ``Retry-After`` instead, without touching the
database again (no session, no user, no template that reads either).

``page_not_found`` is the pages' 404 handler: the Board's page, with the rail, naming what was
not found.

``bad_request`` is the 400 handler: Django's page for the Board, and RFC 6749's JSON error on
the OAuth paths (the discovery documents under ``/.well-known/``, the endpoints under
``/oauth/``), whose every other answer is JSON; above all a ``Host`` not in ``ALLOWED_HOSTS``,
which Django refuses before any view runs.

``/metrics`` shows request counts, paths and queue activity: it answers only a scraper that
sends ``SWITCHBOARD_METRICS_TOKEN`` as a bearer or connects from ``SWITCHBOARD_METRICS_ALLOW``
(loopback by default), and 404 to anyone else, as if it did not exist.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.db import DatabaseError, InterfaceError, OperationalError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.crypto import constant_time_compare
from django.views import defaults
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from django_prometheus.exports import ExportToDjangoView

from switchboard.lib.notfound import NotFound
from switchboard.lib.proxies import FORWARDED_UNTRUSTED_KEY, address_in


def _database_down(exc: DatabaseError) -> JsonResponse:
    # Drop the broken connection so the next check reconnects instead of reusing it.
    connection.close_if_unusable_or_obsolete()
    return JsonResponse({"status": "unavailable", "database": type(exc).__name__}, status=503)


_UNAVAILABLE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Switchboard is unavailable</title></head>
<body><h1>The database is unavailable</h1>
<p>Switchboard cannot reach its database just now. Try again in a moment.</p></body></html>
"""
_ERROR_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Server error</title></head>
<body><h1>Server error</h1><p>Something went wrong on our side; it has been logged.</p></body>
</html>
"""


def server_error(request: HttpRequest) -> HttpResponse:
    """The 500 handler (``handler500``), called while the request's exception is handled: 503
    and ``Retry-After`` when the database connection failed (``OperationalError``,
    ``InterfaceError``: a restart, a failover, a connection it ended); 500 for the rest. HTML
    for a client that takes it, JSON for one that does not."""
    exc = sys.exc_info()[1]
    # A client that takes no HTML (an OAuth client, a script asking for JSON) gets JSON.
    html = request.accepts("text/html")
    response: HttpResponse
    if isinstance(exc, OperationalError | InterfaceError):
        # Drop the broken connection so the next request reconnects.
        connection.close_if_unusable_or_obsolete()
        if html:
            response = HttpResponse(_UNAVAILABLE_PAGE, status=503)
        else:
            response = JsonResponse(
                {"error": "unavailable", "detail": "the database is unavailable; retry later"},
                status=503,
            )
        response["Retry-After"] = "5"
        return response
    if html:
        return HttpResponse(_ERROR_PAGE, status=500)
    return JsonResponse({"error": "server_error", "detail": "an error on our side"}, status=500)


# The paths Django serves that answer only JSON: the OAuth discovery documents and endpoints
# (switchboard/oauth_views.py), for clients that parse no HTML.
_OAUTH_PREFIXES = ("/.well-known/", "/oauth/")


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 400 handler (``handler400``): on the OAuth paths, RFC 6749's error object
    (``invalid_request``, the shape of every other refusal there: ``oauth_views.oauth_error``);
    Django's own page elsewhere (the Board). The commonest cause is a ``Host`` not in
    ``ALLOWED_HOSTS`` (``DisallowedHost``), said as such and never echoed; nothing here asks
    the request for its host."""
    if not request.path.startswith(_OAUTH_PREFIXES):
        return defaults.bad_request(request, exception)
    if isinstance(exception, DisallowedHost):
        said = "the Host header names no host this server answers to (ALLOWED_HOSTS)"
    else:
        said = "the request is malformed"
    response = JsonResponse({"error": "invalid_request", "error_description": said}, status=400)
    response["Cache-Control"] = "no-store"
    return response


# The rail's section a 404 belongs under, and its list: the page's way back.
_SECTIONS = {
    "todos": ("todo_list", "Todos"),
    "alerts": ("alerts", "Alerts"),
    "endpoints": ("endpoint_list", "Endpoints"),
    "sources": ("sources", "Sources"),
    "schedules": ("schedules", "Schedules"),
    "teams": ("teams", "Teams"),
}


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """The 404 handler (``handler404``): the Board's own page, with the rail, saying what was
    not found when a lookup said (``NotFound``: an unknown thing and another human's alike)
    and else that the address is no page; the message alone for htmx, JSON for a client that
    takes no HTML."""
    if not request.accepts("text/html"):
        return JsonResponse({"error": "not_found"}, status=404)
    found = exception if isinstance(exception, NotFound) else None
    section = found.section if found else None
    back_url, back_label = _SECTIONS.get(section or "todos", _SECTIONS["todos"])
    context = {"section": section, "found": found, "back_url": back_url, "back_label": back_label}
    template = "not_found.html#message" if getattr(request, "htmx", False) else "not_found.html"
    return render(request, template, context, status=404)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers a query, 503 when it does not."""
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchone()
    except DatabaseError as exc:
        return _database_down(exc)
    return JsonResponse({"status": "ok", "database": "ok"})


def unapplied_migrations() -> int:
    """How many migrations on disk the database has not applied (one query: django_migrations)."""
    executor = MigrationExecutor(connection)
    return len(executor.migration_plan(executor.loader.graph.leaf_nodes()))


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers and has every migration applied; 503 otherwise."""
    try:
        pending = unapplied_migrations()
    except DatabaseError as exc:
        return _database_down(exc)
    if pending:
        return JsonResponse(
            {
                "status": "unavailable",
                "database": "ok",
                "migrations": "pending",
                "pending": pending,
            },
            status=503,
        )
    return JsonResponse({"status": "ok", "database": "ok", "migrations": "ok"})


def metrics_allowed(request: HttpRequest) -> bool:
    """Whether ``request`` carries the metrics bearer or comes from an allow-listed address."""
    token = settings.SWITCHBOARD_METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if token and scheme.lower() == "bearer" and constant_time_compare(given.strip(), token):
        return True
    # A request relayed by a proxy that is not trusted has the proxy's address (often
    # loopback) as its own; its real client is unknown, so the address proves nothing.
    if getattr(request, "scope", {}).get(FORWARDED_UNTRUSTED_KEY):
        return False
    return address_in(request.META.get("REMOTE_ADDR"), settings.SWITCHBOARD_METRICS_ALLOW)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """django-prometheus's exposition, for allowed scrapers only; 404 to anyone else."""
    if not metrics_allowed(request):
        raise Http404
    return ExportToDjangoView(request)
