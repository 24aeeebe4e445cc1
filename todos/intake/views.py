"""``POST /hooks/{source_slug}``: the HTTP face of webhook intake (``deliveries`` does the work).

Every answer is JSON, never an HTML page: 202 (routed or dropped), 200 (duplicate delivery),
400, 401, 404, 405, 413, 429 (with ``Retry-After``) when a sender's address is over its rate,
a source over its rate of deliveries that passed their signature (``hooks_rate_per_source``) or
over its rate of rejected ones (``hooks_rejected_per_source``: beyond it a delivery with a bad
signature is not stored), and 503 when the database is unreachable (with ``Retry-After``, so the
sender redelivers). Data the database refuses is a 400, never a 503: a sender would redeliver it
forever. The body cap is enforced twice: by ``guard`` in front of Django on the ASGI server
(the front door's address rate and body steps, ``switchboard/lib/frontdoor.py``, configured by
``DOOR``), before the body is buffered, and by the view for any other way in (the test client).
The source's rates are counted by ``deliveries.receive`` once the source is known, so a
stranger's unsigned posts cannot spend the budget its real sender delivers under.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import DatabaseError, DataError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from switchboard import runtime_settings
from switchboard.lib import asgi, frontdoor, limits
from switchboard.lib.text import whole_number
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
    if (size := whole_number(declared)) is not None and size > limit:
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
            source_budget=_source_budget,
        )
    except deliveries.Throttled as exc:
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
    within it, else the seconds until another would be stored."""
    return _spend("rejected", source_id, runtime_settings.current().hooks_rejected_per_source)


def _source_budget(source_id: int) -> int | None:
    """Count a delivery that passed its signature against its source's
    ``hooks_rate_per_source``: None while within it, else the seconds until another passes."""
    return _spend("source", source_id, runtime_settings.current().hooks_rate_per_source)


def _spend(dimension: str, source_id: int, rate: int) -> int | None:
    """The view runs in a worker thread of the server's event loop; ``async_to_sync`` counts on
    that loop's limiter, the one ``guard`` counts on (the same store, Redis when configured)."""
    verdict = async_to_sync(_hit)(dimension, source_id, rate)
    return None if verdict.allowed else verdict.retry_after


async def _hit(dimension: str, source_id: int, rate: int) -> limits.Verdict:
    return await limits.limiter(settings.REDIS_URL).hit("hooks", dimension, str(source_id), rate)


# --- the ASGI guard ------------------------------------------------------------------------


def encode_refusal(refused: frontdoor.Refused, content_type: str | None) -> tuple[str, bytes]:
    """A refusal at the door (or the server's) in the view's JSON: a sender reads one shape."""
    if refused.reason in (frontdoor.RATE_ADDRESS, frontdoor.RATE_ENDPOINT):
        message = f"too many deliveries; redeliver after {refused.retry_after} s"
        refused = frontdoor.Refused(refused.status, refused.reason, message)
    return frontdoor.encode_json(refused, content_type)


DOOR = frontdoor.Door(
    name="hooks",
    cap=lambda: int(settings.SWITCHBOARD_HOOK_MAX_BODY_BYTES),
    encode=encode_refusal,
    rate_per_address="hooks_rate_per_address",
)


async def guard(scope: Any, receive: Any, send: Any, app: Any) -> None:
    """Refuse a sender over its address's rate (429) and an oversized delivery (413) before the
    body is buffered, then hand over to ``app``.

    Django's ASGI handler spools the whole body before a view runs; without this, a sender could
    make the server store an unbounded body just to be told it is too large.
    """
    try:
        await frontdoor.admit_address(DOOR, scope, await runtime_settings.acurrent_or_defaults())
        body = await frontdoor.read_body(DOOR, scope, receive)
    except frontdoor.Refused as refused:
        await frontdoor.send_refusal(send, DOOR, refused)
        return
    except asgi.ClientDisconnected:
        return
    await app(scope, asgi.replay(body, receive), send)
