"""Reading a request body at the ASGI level, under a cap, before an application sees it.

MCP (``mcp_server.transport``) and webhooks (``todos.intake.views.guard``) refuse an oversized body
as soon as it is known to be one: from its Content-Length, or while it streams in. Django's
ASGI handler would otherwise spool the whole body before any view could say no.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from switchboard.lib.text import whole_number

# The ASGI types every raw ASGI app of the project (MCP, A2A, OTLP) spells its signatures with.
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class BodyTooLarge(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the body is over the {limit}-byte limit")
        self.limit = limit


class ClientDisconnected(Exception):
    pass


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of header ``name`` (lower-case bytes), or None."""
    for key, value in scope.get("headers") or ():
        if key == name:
            return bytes(value).decode("latin-1")
    return None


async def read_body(scope: Scope, receive: Any, limit: int) -> bytes:
    """The whole request body; ``BodyTooLarge`` as soon as it is known to exceed ``limit``."""
    declared = header(scope, b"content-length")
    if (size := whole_number(declared or "")) is not None and size > limit:
        raise BodyTooLarge(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay(body: bytes, receive: Any) -> Any:
    """A ``receive`` that hands over the body already read, then the real channel."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        message: Message = await receive()
        return message

    return replayed
