"""Core pages: the health checks.

``/healthz`` is liveness as this project has always meant it: the process answers and its
database answers a query. ``/readyz`` is readiness: that, and every migration on disk applied,
so a load balancer sends no traffic to code whose schema is not there yet (an upgrade in
progress, a migrate step that failed).
"""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


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
