"""``POST /hooks/{source_slug}``: the HTTP face of webhook intake (``deliveries`` does the work).

Every answer is JSON, never an HTML page: 202 (routed or dropped), 200 (duplicate delivery),
400, 401, 404, 405, 413, 429 (with ``Retry-After``) when a sender is over its rate or a source
over its rate of rejected deliveries (``hooks_rejected_per_source``: beyond it a delivery with a
bad signature is not stored), and 503 when
the database is unreachable (with ``Retry-After``, so the sender redelivers). Data the database
refuses is a 400, never a 503: a sender would redeliver it forever. The body cap is
enforced twice: by ``guard`` in front of Django on the ASGI server, before the body is buffered,
and by the view for any other way in (the test client). The rates (per client address and per
source, runtime settings) are ``guard``'s alone, checked before the body is read.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import DatabaseError, DataError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from switchboard import runtime_settings
from switchboard.lib import asgi, limits, metrics
from todos.intake import deliveries

log = logging.getLogger(__name__)

PREFIX = "/hooks"


def error(status: int, code: str, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": code, "message": message, **extra}, status=status)


def _too_large(limit: int) -> JsonResponse:
    return error(413, "too_large", f"the body is over the {limit}-byte limit", limit=limit)


@csrf_exempt
@never_cache
def hook(request: HttpRequest, source_slug: str | None = None) -> JsonResponse:
    if request.method != "POST":
        response = error(405, "method_not_allowed", "deliver webhooks with POST")
        response["Allow"] = "POST"
        return response
    if not source_slug or "/" in source_slug:
        return error(404, "unknown_source", "POST to /hooks/<source-slug>")
    limit = settings.SWITCHBOARD_HOOK_MAX_BODY_BYTES
    declared = request.META.get("CONTENT_LENGTH") or ""
    if declared.isdigit() and int(declared) > limit:
        return _too_large(limit)
    body = request.read(limit + 1)
    if len(body) > limit:
        return _too_large(limit)
    try:
        delivery = deliveries.receive(
            source_slug,
            body,
            request.headers.items(),
            content_type=request.content_type or "",
            rejected_budget=_rejected_budget,
        )
    except deliveries.RejectedTooOften as exc:
        response = error(exc.status, exc.code, exc.message)
        response["Retry-After"] = str(exc.retry_after)
        return response
    except deliveries.IntakeError as exc:
        extra = {} if exc.event_id is None else {"event_id": exc.event_id}
        return error(exc.status, exc.code, exc.message, **extra)
    except DataError:
        # The delivery held something the database refused that the checks before it missed:
        # redelivering the same bytes would fail the same way, so it is not an outage.
        log.exception("webhook intake for %r: data refused by the database", source_slug)
        return error(400, "invalid", "the delivery holds data the database cannot store")
    except DatabaseError:
        log.exception("webhook intake for %r: database error", source_slug)
        response = error(503, "unavailable", "the database is unavailable; redeliver later")
        response["Retry-After"] = "30"
        return response
    return JsonResponse(delivery.as_json(), status=delivery.status)


def _rejected_budget(source_id: int) -> int | None:
    """Count a rejected delivery against its source's ``hooks_rejected_per_source``: None while
    within it, else the seconds until another would be stored.

    The view runs in a worker thread of the server's event loop; ``async_to_sync`` counts on
    that loop's limiter, the one ``guard`` counts on (the same store, Redis when configured).
    """
    rate = runtime_settings.current().hooks_rejected_per_source
    verdict = async_to_sync(_hit_rejected)(source_id, rate)
    return None if verdict.allowed else verdict.retry_after


async def _hit_rejected(source_id: int, rate: int) -> limits.Verdict:
    return await limits.limiter(settings.REDIS_URL).hit("hooks", "rejected", str(source_id), rate)


# --- the ASGI guard ------------------------------------------------------------------------


def is_hook_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


async def guard(scope: Any, receive: Any, send: Any, app: Any) -> None:
    """Refuse an oversized delivery (413) before the body is buffered, then hand over to ``app``.

    Django's ASGI handler spools the whole body before a view runs; without this, a sender could
    make the server store an unbounded body just to be told it is too large.
    """
    if (retry_after := await _over_rate(scope)) is not None:
        await _send_json(
            send,
            429,
            {
                "error": "rate_limited",
                "message": f"too many deliveries; redeliver after {retry_after} s",
            },
            [(b"retry-after", str(retry_after).encode())],
        )
        return
    limit = settings.SWITCHBOARD_HOOK_MAX_BODY_BYTES
    try:
        body = await asgi.read_body(scope, receive, limit)
    except asgi.BodyTooLarge:
        await _send_too_large(send, limit)
        return
    except asgi.ClientDisconnected:
        return
    await app(scope, asgi.replay(body, receive), send)


async def _over_rate(scope: Any) -> int | None:
    """Seconds until a delivery would pass, when its address or its source is over its rate."""
    current = await runtime_settings.acurrent_or_defaults()
    source = scope.get("path", "")[len(PREFIX) :].strip("/")
    limiter = limits.limiter(settings.REDIS_URL)
    for dimension, key, rate in (
        ("address", limits.client_address(scope), current.hooks_rate_per_address),
        ("source", source, current.hooks_rate_per_source),
    ):
        verdict = await limiter.hit("hooks", dimension, key, rate)
        if not verdict.allowed:
            metrics.rate_limited("hooks", dimension)
            return verdict.retry_after
    return None


async def _send_too_large(send: Any, limit: int) -> None:
    await _send_json(
        send,
        413,
        {
            "error": "too_large",
            "message": f"the body is over the {limit}-byte limit",
            "limit": limit,
        },
        [(b"connection", b"close")],
    )


async def _send_json(
    send: Any, status: int, payload: dict[str, Any], headers: list[tuple[bytes, bytes]]
) -> None:
    body = json.dumps(payload).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
