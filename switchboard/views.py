"""Core pages: the health check."""

from __future__ import annotations

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers a query, 503 when it does not."""
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
            cur.fetchone()
    except DatabaseError as exc:
        # Drop the broken connection so the next check reconnects instead of reusing it.
        connection.close_if_unusable_or_obsolete()
        return JsonResponse({"status": "unavailable", "database": type(exc).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": "ok"})
