"""Core pages: the health checks and the guarded metrics.

``/healthz`` is liveness as this project has always meant it: the process answers and its
database answers a query. ``/readyz`` is readiness: that, and every migration on disk applied,
so a load balancer sends no traffic to code whose schema is not there yet (an upgrade in
progress, a migrate step that failed).

``/metrics`` shows request counts, paths and queue activity: it answers only a scraper that
sends ``SWITCHBOARD_METRICS_TOKEN`` as a bearer or connects from ``SWITCHBOARD_METRICS_ALLOW``
(loopback by default), and 404 to anyone else, as if it did not exist.
"""

from __future__ import annotations

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.utils.crypto import constant_time_compare
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from django_prometheus.exports import ExportToDjangoView

from switchboard.lib.proxies import FORWARDED_UNTRUSTED_KEY, address_in


def _database_down(exc: DatabaseError) -> JsonResponse:
    # Drop the broken connection so the next check reconnects instead of reusing it.
    connection.close_if_unusable_or_obsolete()
    return JsonResponse({"status": "unavailable", "database": type(exc).__name__}, status=503)


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
