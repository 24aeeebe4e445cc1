"""The Board's live updates: the relay (a committed change → its owner's sockets) and the
WebSocket consumer (→ htmx fragments rendered from the pages' own partials).

Flow
----
1. A transition commits; ``todos.events`` tells ``relay(todo_id, endpoint_id, state)``.
2. The relay maps the endpoint to its owning human and ``group_send``s ``todo.changed`` to the
   group ``live.human.<id>``: that human's sockets only, in every process sharing the channel
   layer (Redis when ``REDIS_URL`` is set; the in-memory layer reaches this process only).
3. Each socket re-reads what its page shows through the owner-scoped reads, in the scope of
   the socket's own human (so even a misrouted message could show nothing foreign), and sends
   out-of-band fragments that htmx's ws extension swaps in.

What a socket watches
---------------------
The trail page (``/todos/<id>``) connects with its first paint's watermarks (``Watermark``):
the newest activity row and attempt it showed, and whether that attempt was open. On connect
and after each change of its todo, the socket sends the live container after the timeline
whole, holding every entry newer than the watermarks (``activity.markup.entry_html``, as the
first paint), with the state badge, the facts, the operator actions and the head, heartbeat line and
waterfall of the attempt that was open. Since the container always carries everything since
the first paint, a reconnect (the extension's, after a drop) re-syncs by construction: nothing
is lost, nothing doubled.
The todo list connects with the ids of its rows and gets a row's state cell when it changes.

Cost
----
The relay runs on the transition's thread after commit. It looks the owner up once per
endpoint per process (an endpoint's owner is set at creation and never changes,
switchboard/credentials.py and the admin's read-only owner, so the cache never goes stale and
holds one entry per endpoint), hands the send to an event loop and returns: it never waits on
the layer, and a layer that is down is logged, never raised into the transition.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import parse_qs
from uuid import UUID

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import BaseChannelLayer, InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.template.loader import render_to_string
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from activity.markup import (
    attempt_head_html,
    attempt_heartbeat_html,
    attempt_waterfall_html,
    entry_html,
    trail_rows,
)
from activity.trail import CLAIM, END, TimelineEntry, Trail, todo_trail
from switchboard.lib import dbthread
from switchboard.lib.errors import TodoNotFound
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import queries, states

logger = logging.getLogger(__name__)

PATH = "ws/live/"
TRAIL_PUSH = "todos/todo_detail.html#live_push"
STATE_CELL = "todos/todo_list.html#state_cell"
# Application close codes (4000-4999): the ws extension reconnects only after a drop (1006,
# 1011-1013), so a socket that can never work is not retried.
CLOSE_BAD_REQUEST = 4400
CLOSE_NOT_FOUND = 4404
SEND_TIMEOUT_SECONDS = 5.0
FLUSH_SECONDS = 2.0  # at exit, how long sends still in flight may take
ROWS_MAX = 200  # row ids a list socket watches (a page shows 50)
_ID_MAX = 64
_INT_MAX = 2**31 - 1


def group_name(human_id: int) -> str:
    """The channel-layer group of one human's sockets."""
    return f"live.human.{human_id}"


# --- the relay -------------------------------------------------------------------------------

_owners: dict[UUID, int] = {}


def _owner(endpoint_id: UUID) -> int | None:
    owner = _owners.get(endpoint_id)
    if owner is None:
        owner = Endpoint.objects.filter(pk=endpoint_id).values_list("owner_id", flat=True).first()
        if owner is not None:
            _owners[endpoint_id] = owner
    return owner


class _Sender:
    """Runs each ``group_send`` on an event loop, off the caller's thread.

    The in-memory layer reaches only this process's sockets, and its queues belong to the loop
    those sockets run on: its sends go to that loop (recorded by each socket that connects);
    while none is running, nobody here listens and nothing is sent. A layer shared between
    processes (Redis) gets a loop of its own on a daemon thread, so a process without sockets
    (the sweeper) still reaches the others; sends still in flight at exit get FLUSH_SECONDS.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server_loop: asyncio.AbstractEventLoop | None = None
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self._pending: set[concurrent.futures.Future[None]] = set()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._server_loop = loop

    def loop_for(self, layer: BaseChannelLayer) -> asyncio.AbstractEventLoop | None:
        if isinstance(layer, InMemoryChannelLayer):
            loop = self._server_loop
            return loop if loop is not None and loop.is_running() else None
        with self._lock:
            if self._own_loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="live-relay", daemon=True).start()
                atexit.register(self.flush)
                self._own_loop = loop
            return self._own_loop

    def submit(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, None]) -> None:
        try:
            future = asyncio.run_coroutine_threadsafe(coro, loop)
        except RuntimeError:  # the loop closed since loop_for
            coro.close()
            raise
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: concurrent.futures.Future[None]) -> None:
        with self._lock:
            self._pending.discard(future)
        if not future.cancelled() and (exc := future.exception()) is not None:
            logger.warning("live update not sent: %r", exc)

    def flush(self, timeout: float = FLUSH_SECONDS) -> None:
        """Wait up to ``timeout`` seconds for the sends in flight."""
        with self._lock:
            pending = tuple(self._pending)
        concurrent.futures.wait(pending, timeout)


_sender = _Sender()


async def _send(layer: BaseChannelLayer, group: str, message: dict[str, Any]) -> None:
    await asyncio.wait_for(layer.group_send(group, message), SEND_TIMEOUT_SECONDS)


def relay(todo_id: str, endpoint_id: UUID, state: str) -> None:
    """Tell the owning human's sockets that ``todo_id`` changed (``todos.events`` listener).

    Never raises: a live update that cannot go out is logged, and the transition stands.
    """
    try:
        layer = get_channel_layer()
        loop = None if layer is None else _sender.loop_for(layer)
        if layer is None or loop is None:
            return
        owner = _owner(endpoint_id)
        if owner is None:
            return
        message = {"type": "todo.changed", "todo_id": todo_id, "state": state}
        _sender.submit(loop, _send(layer, group_name(owner), message))
    except Exception:
        logger.warning("live update for todo %s not sent", todo_id, exc_info=True)


def flush(timeout: float = FLUSH_SECONDS) -> None:
    """Wait up to ``timeout`` seconds for the relay's sends in flight (benchmarks, tests)."""
    _sender.flush(timeout)


# --- what a page shows -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Watermark:
    """What a trail page's first paint showed: everything up to the newest activity row
    (``seq``, 0 for none) and the newest attempt (``attempt``, 0 for none), that attempt's end
    only if it was not ``open``. Activity rows and attempts are numbered per todo in commit
    order, so "newer than the watermark" is exactly "not on the first paint"."""

    todo_id: str
    seq: int
    attempt: int
    open: bool

    @classmethod
    def parse(cls, query: Mapping[str, list[str]]) -> Self | None:
        """The watermark of a trail socket's query string; None for another page's socket.

        Raises ``ValueError`` for a value the trail page never writes.
        """
        todo_id = _one(query, "todo")
        if todo_id is None:
            return None
        if not todo_id or len(todo_id) > _ID_MAX or not todo_id.isprintable():
            raise ValueError("todo")
        return cls(
            todo_id=todo_id,
            seq=_count(_one(query, "seq")),
            attempt=_count(_one(query, "attempt")),
            open=_one(query, "open") == "1",
        )

    def is_new(self, entry: TimelineEntry) -> bool:
        """Whether the first paint did not show ``entry``."""
        if entry.activity is not None:
            return entry.activity.seq > self.seq
        if entry.kind == CLAIM:
            return entry.seq > self.attempt
        if entry.kind == END:
            return entry.seq > self.attempt or (entry.seq == self.attempt and self.open)
        return False  # the delivery and the creation are on every first paint


def _one(query: Mapping[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _count(text: str | None) -> int:
    value = int(text or "0")
    if not 0 <= value <= _INT_MAX:
        raise ValueError(text)
    return value


def _rows(query: Mapping[str, list[str]]) -> frozenset[str]:
    ids = [i for i in (_one(query, "rows") or "").split(",") if i]
    if len(ids) > ROWS_MAX or any(len(i) > _ID_MAX for i in ids):
        raise ValueError("rows")
    return frozenset(ids)


def new_entries(trail: Trail, watermark: Watermark) -> list[TimelineEntry]:
    """The trail's entries the first paint of ``watermark`` did not show, in time order."""
    entries: list[TimelineEntry] = []
    for block in trail.blocks:
        if block.entry is not None:
            entries.append(block.entry)
        elif block.group is not None:
            entries.extend(block.group.entries)
            if block.group.end is not None:
                entries.append(block.group.end)
    return sorted((e for e in entries if watermark.is_new(e)), key=lambda e: e.sort_key)


def trail_push(human_id: int, watermark: Watermark, csrf_token: str | None) -> str | None:
    """The trail socket's message: the live container and the parts a change may alter, out
    of band; None when the todo is not (or no longer) in the human's scope."""
    try:
        trail = todo_trail(human_id, watermark.todo_id)
    except TodoNotFound:
        return None
    todo = trail.todo
    now = timezone.now()
    rows = trail_rows(trail, now)
    tz = timezone.get_current_timezone()
    open_group_html = ""
    if watermark.open:
        open_group = next(
            (b.group for b in trail.blocks if b.group and b.group.seq == watermark.attempt), None
        )
        if open_group is not None:
            row = rows.get(open_group.seq)
            open_group_html = attempt_head_html(open_group, row, todo.max_attempts, oob=True)
            if row is not None:
                # New spans of the open attempt redraw its waterfall (otlp/refresh.py
                # announces them).
                heartbeat = attempt_heartbeat_html(open_group, tz, oob=True)
                waterfall = attempt_waterfall_html(
                    todo, open_group, row, trail.waterfalls.get(open_group.seq), oob=True
                )
                open_group_html += f"\n{heartbeat}\n{waterfall}"
            else:
                open_group_html += "\n"
    context = {
        "todo": todo,
        "live_html": SafeString(
            "".join(
                [
                    entry_html(e, rows.get(e.seq) if e.kind in (CLAIM, END) else None, tz)
                    for e in new_entries(trail, watermark)
                ]
            )
        ),
        "actions": states.operator_actions(
            todo, now, endpoint_revoked=todo.endpoint.revoked_at is not None
        ),
        "open_group_html": mark_safe(open_group_html),  # noqa: S308 (built escaped, above)
        "page": True,
        "csrf_token": csrf_token,
        "oob": True,
    }
    return render_to_string(TRAIL_PUSH, context)


def state_cell(human_id: int, todo_id: str) -> str | None:
    """A list row's state cell, out of band; None for a todo not in the human's scope."""
    try:
        todo = queries.todo_in_scope(Scope.of_human(human_id), todo_id)
    except TodoNotFound:
        return None
    return render_to_string(STATE_CELL, {"todo": todo, "cell_oob": True})


def _masked_csrf_token(secret: str | None) -> str | None:
    """A form token for the CSRF cookie the socket's handshake carried (the page set it), so
    the actions a push redraws post like the first paint's; None without a usable cookie."""
    if not secret or len(secret) != 32 or not secret.isalnum():
        return None
    request = HttpRequest()
    request.META["CSRF_COOKIE"] = secret
    return get_token(request)


# --- the consumer --------------------------------------------------------------------------------


class LiveConsumer(AsyncWebsocketConsumer):
    """One Board page's socket: logged-in humans only, told only of their own todos."""

    human_id: int
    watermark: Watermark | None
    rows: frozenset[str]
    csrf_token: str | None
    joined = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()  # before accept: the handshake is refused
            return
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        try:
            self.watermark = Watermark.parse(query)
            self.rows = _rows(query)
        except ValueError:
            await self.accept()
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        self.human_id = user.pk
        cookies = self.scope.get("cookies", {})
        self.csrf_token = _masked_csrf_token(cookies.get(settings.CSRF_COOKIE_NAME))
        _sender.attach(asyncio.get_running_loop())
        # Join before the first read: a change committed meanwhile is pushed again, never lost.
        await self.channel_layer.group_add(group_name(self.human_id), self.channel_name)
        self.joined = True
        await self.accept()
        if self.watermark is not None:
            await self._push_trail()

    async def disconnect(self, code: int) -> None:
        if self.joined:
            await self.channel_layer.group_discard(group_name(self.human_id), self.channel_name)

    async def todo_changed(self, event: dict[str, Any]) -> None:
        todo_id = event.get("todo_id")
        if self.watermark is not None:
            if todo_id == self.watermark.todo_id:
                await self._push_trail()
        elif isinstance(todo_id, str) and todo_id in self.rows:
            html = await dbthread.run(state_cell, self.human_id, todo_id, thread_sensitive=True)
            if html is not None:
                await self.send(text_data=html)

    async def _push_trail(self) -> None:
        assert self.watermark is not None
        html = await dbthread.run(
            trail_push, self.human_id, self.watermark, self.csrf_token, thread_sensitive=True
        )
        if html is None:
            await self.close(code=CLOSE_NOT_FOUND)
        else:
            await self.send(text_data=html)


urlpatterns: list[URLPattern] = [path(PATH, LiveConsumer.as_asgi(), name="live")]
