"""The ASGI application: MCP at /mcp/{slug}, A2A at /a2a/{slug} and the OTLP receiver at
/otlp/{slug}/v1/traces beside Django, webhooks behind their body cap; the Board's live updates
over WebSockets at /ws/live/ (activity/live.py).

``/mcp`` goes to the MCP transport (an ASGI app around the official SDK), ``/a2a`` to the A2A
transport (``a2a_server.transport``, around the A2A SDK's Starlette routes), ``/otlp`` to the
trace receiver (``otlp.receiver``, which reads the body under its cap itself), everything else to
Django. The ``lifespan`` entry starts and stops the MCP session manager on servers that send
lifespan events (uvicorn); daphne sends none, and the manager then starts on the first MCP
request (``mcp_server.server.McpRuntime``). The process's change feed
(``switchboard/lib/changefeed.py``: one LISTEN connection for the doorbell, the live pages, A2A
and the OTLP refresh) starts before the first request or socket of any kind is served (or at
the lifespan's start), since every consumer serves something a request opened. Around it all,
``ForwardedMiddleware`` believes
X-Forwarded-For/-Proto from ``SWITCHBOARD_TRUSTED_PROXIES`` only (switchboard/lib/proxies.py).
``ROUTES`` is the front door's route table (switchboard/lib/frontdoor.py): a row per surface
(prefix, the surface's door: rates, body cap, how it encodes a refusal; its ASGI app). ``http``
routes by it, and the server (switchboard/lib/server.py) reads it to refuse an over-cap, slow or
crowding body before the application runs, in the path's surface's shape
(docs/decisions/0023-one-front-door.md).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from django.core.asgi import get_asgi_application

from switchboard import embedded

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "switchboard.settings")

# A bare daphne start has no manage.py to start the embedded database (when DATABASE_URL is
# unset); under manage.py serve it already runs and this costs nothing.
embedded.ensure_running()
django_application = get_asgi_application()

# These need the app registry ready (models are imported).
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from a2a_server import transport as a2a_transport  # noqa: E402
from activity import live  # noqa: E402
from mcp_server import server as mcp_server  # noqa: E402
from mcp_server import transport as mcp_transport  # noqa: E402
from otlp import receiver as otlp_receiver  # noqa: E402
from switchboard import oauth_views, runtime_settings  # noqa: E402
from switchboard.lib import asgi as asgi_lib  # noqa: E402
from switchboard.lib import changefeed, frontdoor, metrics, proxies, server  # noqa: E402
from switchboard.lib.proxies import ForwardedMiddleware  # noqa: E402
from todos.intake import views as hooks  # noqa: E402


async def _hook(scope: Any, receive: Any, send: Any) -> None:
    await metrics.timed(_guarded_hook, scope, receive, send, metrics.hook_request)


async def _guarded_hook(scope: Any, receive: Any, send: Any) -> None:
    await hooks.guard(scope, receive, send, django_application)


async def _mcp(scope: Any, receive: Any, send: Any) -> None:
    method = scope.get("method", "")
    if method == "GET":  # the event stream: open as long as the client wants, not timed
        await mcp_transport.application(scope, receive, send)
    else:
        await metrics.timed(
            mcp_transport.application, scope, receive, send, metrics.mcp_request(method)
        )


async def _oauth(scope: Any, receive: Any, send: Any) -> None:
    """The OAuth token and registration endpoints: the address's rate and the body's cap
    before Django (switchboard/oauth_views.py), refused in RFC 6749's JSON shape."""
    door = oauth_views.DOOR
    try:
        await frontdoor.admit_address(door, scope, await runtime_settings.acurrent_or_defaults())
        body = await frontdoor.read_body(door, scope, receive)
    except frontdoor.Refused as refused:
        await frontdoor.send_refusal(send, door, refused)
        return
    except asgi_lib.ClientDisconnected:
        return
    await django_application(scope, asgi_lib.replay(body, receive), send)


# Django: the Board's and the admin's forms (DATA_UPLOAD_MAX_MEMORY_SIZE is this cap).
_DJANGO = frontdoor.Door(
    name="django",
    cap=lambda: int(settings.SWITCHBOARD_MAX_BODY_BYTES),
    encode=frontdoor.encode_json,
)

logger = logging.getLogger(__name__)

ROUTES = frontdoor.RouteTable(
    routes=(
        frontdoor.Route(mcp_transport.PREFIX, mcp_transport.DOOR, _mcp),
        frontdoor.Route(a2a_transport.PREFIX, a2a_transport.DOOR, a2a_transport.application),
        frontdoor.Route(otlp_receiver.PREFIX, otlp_receiver.DOOR, otlp_receiver.application),
        frontdoor.Route(hooks.PREFIX, hooks.DOOR, _hook),
        *(
            frontdoor.Route(prefix, oauth_views.DOOR, _oauth)
            for prefix in oauth_views.RATED_PREFIXES
        ),
    ),
    default=frontdoor.Route("", _DJANGO, django_application),
    body_seconds=settings.SWITCHBOARD_BODY_SECONDS,
    bodies_per_address=settings.SWITCHBOARD_BODIES_PER_ADDRESS,
    # A trusted proxy carries many clients' bodies on its connections: not one client's.
    uncounted=lambda address: proxies.address_in(address, settings.SWITCHBOARD_TRUSTED_PROXIES),
)


async def http(scope: Any, receive: Any, send: Any) -> None:
    await ROUTES.route(scope.get("path", "")).app(scope, receive, send)


server.set_routes(ROUTES)


# The Board's live updates: the Django session logs the socket in; a page of another origin
# cannot open one with the human's cookies.
websocket = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(live.urlpatterns)))

router = ProtocolTypeRouter({"http": http, "websocket": websocket, "lifespan": mcp_server.lifespan})


async def with_feed(scope: Any, receive: Any, send: Any) -> None:
    """``router``, once the change feed listens on this loop: the first request waits (bounded)
    for its first LISTEN, so a stream or socket it opens hears the next change; later ones only
    check that it still runs.

    An exception that ends a request or a socket is logged here with its traceback and the
    request's path (daphne's own line names neither the path nor the socket), then re-raised for
    the server to answer (500, or the socket's close 1011)."""
    try:
        if not changefeed.FEED.running:
            await changefeed.FEED.start()
        await router(scope, receive, send)
    except Exception:
        logger.exception(
            "%s %s ended by an exception",
            scope.get("type", "request"),
            scope.get("path", "?"),
        )
        raise


application = ForwardedMiddleware(with_feed, settings.SWITCHBOARD_TRUSTED_PROXIES)
