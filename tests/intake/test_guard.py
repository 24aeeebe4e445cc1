"""The ASGI guard in front of Django for /hooks: an oversized body is refused before it is read
to the end, and Django never sees it; a body within the cap reaches Django whole."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from django.test import override_settings

from todos.intake import views as hooks

CHUNK = b"x" * 1024


class Channel:
    """An ASGI receive/send pair: ``chunks`` bodies arrive one per receive."""

    def __init__(self, chunks: int) -> None:
        self.left = chunks
        self.received = 0
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        self.received += 1
        self.left -= 1
        return {"type": "http.request", "body": CHUNK, "more_body": self.left > 0}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


def guarded(channel: Channel, headers: list[tuple[bytes, bytes]]) -> list[bytes]:
    """Run the guard; return the bodies the application behind it read (none if never called)."""
    seen: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append((await receive())["body"])

    scope = {
        "type": "http",
        "path": "/hooks/github",
        "headers": [(b"host", b"testserver"), *headers],
    }
    asyncio.run(hooks.guard(scope, channel.receive, channel.send, app))
    return seen


@override_settings(SWITCHBOARD_HOOK_MAX_BODY_BYTES=2048)
def test_a_streamed_body_over_the_cap_is_refused_before_it_ends() -> None:
    channel = Channel(chunks=100)

    assert guarded(channel, []) == []

    assert channel.received == 3  # 3 KiB read of 100: refused as soon as it was over 2 KiB
    start, body = channel.sent
    assert start["status"] == 413
    assert json.loads(body["body"])["error"] == "too_large"


@override_settings(SWITCHBOARD_HOOK_MAX_BODY_BYTES=2048)
def test_a_declared_length_over_the_cap_is_refused_unread() -> None:
    channel = Channel(chunks=100)

    assert guarded(channel, [(b"content-length", b"102400")]) == []

    assert channel.received == 0
    assert channel.sent[0]["status"] == 413


@override_settings(SWITCHBOARD_HOOK_MAX_BODY_BYTES=2048)
def test_a_body_within_the_cap_reaches_the_application_whole() -> None:
    channel = Channel(chunks=2)

    assert guarded(channel, []) == [CHUNK * 2]
    assert channel.sent == []
