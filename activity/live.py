"""The Board's live updates: the relay (a committed change → its owner's sockets) and the
WebSocket consumer (→ htmx fragments rendered from the pages' own partials).

Flow
----
1. A transition commits; its statement's announcement (``todos/sql/_notify.sql``) is sent, and
   every process's change feed (``switchboard/lib/changefeed.py``) tells ``relay(change)``.
2. The relay maps the endpoint to its owner (a human, or a team) and sends ``todo.changed``
   to the sockets open in this process that registered under that owner (``_sockets``): a
   socket registers under its human and under each team the human belongs to when it
   connects, so every member's page hears the team's changes. Each by its own channel name.
   Every process hears every change itself, so no layer needs to carry it between processes
   (no Redis), and each socket is sent it once: a shared Redis layer would get the same
   ``group_send`` from every process that heard the change, so the relay never sends to a
   group, only to the sockets connected here.
3. Each socket re-reads what its page shows through the owner-scoped reads, in the scope of
   the socket's own human (so even a misrouted message could show nothing foreign), and sends
   out-of-band fragments that htmx's ws extension swaps in. After the feed reconnects
   (``RESYNC``: changes may have been missed) every socket re-reads once.

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
The todo list connects with its filters, the ids of its rows and where new rows may go
(``ListWatch``). A change of a row it shows redraws that row; a todo it does not show that now
matches its filters (new, or newly claimed or finished into a state filter) is sent as an
incoming row, which the page (``static/board.js``) places at once when the operator is at the
top of a newest-first first page and otherwise counts in an "N new" bar, so the operator's
scroll, drawer and filter stay as they were. On ``RESYNC`` the list re-reads all its rows in one
query (``queries.listed_todos``) and, on a first page, its first page, sending what it missed.

Cost
----
The relay runs on the feed's event loop and must not block it. A process with no socket open
does nothing. It looks the owner up once per endpoint per process, in a thread, and keeps it
for ``OWNER_TTL_SECONDS`` (an endpoint moved into a team, ``credentials.move_endpoint``, is
relayed to the team's sockets from then on; one entry per endpoint), and sends in a task of its
own: a send the layer refuses is tried again a few times (``SEND_RETRY_SECONDS``: a Redis
layer refuses the first send on each pooled connection after Redis restarts), then logged,
never raised into the feed. The sends go one after another: sent concurrently, a new todo's
row sometimes never reached the list socket in tests/e2e/test_live_list.py (cause not yet
known), so a socket whose sends are refused delays the others behind it by its retries. A socket's
teams are read when it connects: a member added later hears the team's changes from the page's
next load, and a member removed meanwhile is told of changes it can no longer read (each re-read
is in its human's scope, so it shows nothing: the message is only a hint).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self
from urllib.parse import parse_qs
from uuid import UUID

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import get_channel_layer
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
from switchboard import actors
from switchboard.lib import changefeed, dbthread
from switchboard.lib.actors import Actor
from switchboard.lib.changefeed import Change
from switchboard.lib.errors import TodoNotFound
from switchboard.models import Endpoint, TeamMember
from switchboard.scope import Scope
from todos import queries, states
from todos.models import Todo

logger = logging.getLogger(__name__)

PATH = "ws/live/"
TRAIL_PUSH = "todos/todo_detail.html#live_push"
ROW = "todos/todo_list.html#row"
LIVE_ROWS_MAX = 1000  # rows a list socket tracks, its first paint's and those it was sent
# Application close codes (4000-4999): the ws extension reconnects only after a drop (1006,
# 1011-1013), so a socket that can never work is not retried.
CLOSE_BAD_REQUEST = 4400
CLOSE_NOT_FOUND = 4404
SEND_TIMEOUT_SECONDS = 5.0
# Waits before each new try of a send the layer refused. A Redis layer refuses the first send on
# each pooled connection after Redis restarted (the connection died with it); every message makes
# its socket re-read what it shows, so a late or repeated one is harmless, a dropped one leaves an
# open page stale until its todo's next change (found by bench/soak.py's Redis restart).
SEND_RETRY_SECONDS = (0.2, 1.0, 3.0)
FLUSH_SECONDS = 2.0  # how long flush() waits for sends in flight
ROWS_MAX = 200  # row ids a list socket watches (a page shows 50)
_ID_MAX = 64
_INT_MAX = 2**31 - 1


# --- the relay -------------------------------------------------------------------------------

# Who an endpoint's changes go to: ("human", id) or ("team", id), with when it was read.
Owner = tuple[str, int]
OWNER_TTL_SECONDS = 10.0
_owners: dict[UUID, tuple[Owner, float]] = {}
# This process's open sockets: owner → their channel names. Only the loop touches it. A
# socket is under its human's key and under each of its teams'.
_sockets: dict[Owner, set[str]] = {}
_tasks: set[asyncio.Task[None]] = set()
# Changes that redraw nothing by themselves: the store's raw spans (otlp/refresh.py passes them
# on, throttled, as SPANS_DUE).
_IGNORED = frozenset({changefeed.SPANS})


def _cached_owner(endpoint_id: UUID) -> Owner | None:
    entry = _owners.get(endpoint_id)
    if entry is None or time.monotonic() - entry[1] > OWNER_TTL_SECONDS:
        return None
    return entry[0]


def _owner(endpoint_id: UUID) -> Owner | None:
    row = Endpoint.objects.filter(pk=endpoint_id).values_list("owner_id", "team_id").first()
    if row is None:
        return None
    owner: Owner = ("team", row[1]) if row[1] is not None else ("human", row[0])
    _owners[endpoint_id] = (owner, time.monotonic())
    return owner


def _keys(human_id: int) -> list[Owner]:
    """The keys a human's socket registers under: its own and its teams'."""
    teams = TeamMember.objects.filter(human_id=human_id).values_list("team_id", flat=True)
    return [("human", human_id), *(("team", team) for team in teams)]


def relay(change: Change) -> None:
    """The change feed's consumer: tell the owning human's sockets in this process that the
    todo changed (every socket here on ``RESYNC``).

    Never raises: a live update that cannot go out is logged.
    """
    if not _sockets or change.kind in _IGNORED:
        return
    try:
        task = asyncio.get_running_loop().create_task(_relay(change))
    except Exception:
        logger.warning("live update for todo %s not sent", change.todo_id, exc_info=True)
        return
    _tasks.add(task)
    task.add_done_callback(_done)


def _done(task: asyncio.Task[None]) -> None:
    _tasks.discard(task)
    if not task.cancelled() and (exc := task.exception()) is not None:
        logger.warning("live update not sent: %r", exc)


async def _relay(change: Change) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if change.kind == changefeed.RESYNC:
        channels = list({name for names in _sockets.values() for name in names})
        message = {"type": "todo.changed", "todo_id": "", "state": "", "resync": True}
    else:
        if change.endpoint_id is None:
            return
        owner = _cached_owner(change.endpoint_id)
        if owner is None:
            owner = await dbthread.run(_owner, change.endpoint_id)
        if owner is None:
            return
        channels = list(_sockets.get(owner, ()))
        message = {"type": "todo.changed", "todo_id": change.todo_id, "state": change.state}
    for name in channels:
        await _send(layer, name, message)


async def _send(layer: Any, name: str, message: dict[str, Any]) -> None:
    """Send ``message`` to the socket ``name``, trying again (``SEND_RETRY_SECONDS``) while the
    layer refuses it; raise the last refusal."""
    waits = (0.0, *SEND_RETRY_SECONDS)
    for tries, wait in enumerate(waits, 1):
        if wait:
            await asyncio.sleep(wait)
        try:
            await asyncio.wait_for(layer.send(name, message), SEND_TIMEOUT_SECONDS)
            return
        except Exception:
            if tries == len(waits):
                raise


def flush(timeout: float = FLUSH_SECONDS) -> None:
    """Wait up to ``timeout`` seconds for the relay's sends in flight (benchmarks, tests); call
    it from another thread than the feed's loop."""
    deadline = time.monotonic() + timeout
    while _tasks and time.monotonic() < deadline:
        time.sleep(0.01)


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


def _rows(query: Mapping[str, list[str]]) -> set[str]:
    ids = [i for i in (_one(query, "rows") or "").split(",") if i]
    if len(ids) > ROWS_MAX or any(len(i) > _ID_MAX for i in ids):
        raise ValueError("rows")
    return set(ids)


# The list's filter parameters a list socket's query string carries (TodoFilters.parse).
_FILTER_PARAMS = ("endpoint", "queue", "state", "dead", "q", "created_from", "created_to", "sort")


@dataclass(slots=True)
class ListWatch:
    """What a todo list's socket watches: the rows it shows (and was sent since), the filters
    they were chosen by, whether new rows go on top (``insert``: a first page, newest first) and
    the oldest creation time a new row may have (``floor``: the last row's when another page
    follows, else None; the first paint's time when rows are not inserted, so only todos newer
    than the page are counted)."""

    rows: set[str]
    filters: queries.TodoFilters
    insert: bool
    floor: dt.datetime | None

    @classmethod
    def parse(cls, query: Mapping[str, list[str]]) -> ListWatch:
        """Raises ``ValueError`` for a value the list page never writes."""
        params = {name: value for name in _FILTER_PARAMS if (value := _one(query, name))}
        floor_text = _one(query, "floor")
        floor = dt.datetime.fromisoformat(floor_text) if floor_text else None
        if floor is not None and floor.tzinfo is None:
            raise ValueError("floor")
        return cls(
            rows=_rows(query),
            filters=queries.TodoFilters.parse(params),
            insert=_one(query, "insert") == "1",
            floor=floor,
        )

    def fits(self, todo: Todo) -> bool:
        return todo.id not in self.rows and (self.floor is None or todo.created_at >= self.floor)


def _render_rows(todos: list[Todo], *, oob: bool) -> str:
    holders = actors.resolve(
        [t.owner for t in todos], {Actor.endpoint(t.endpoint.id): t.endpoint.slug for t in todos}
    )
    context = {"ws_oob": oob, "holders": holders}
    return "".join(render_to_string(ROW, {**context, "todo": todo}) for todo in todos)


def list_push(human_id: int, watch: ListWatch, todo_id: str | None) -> str | None:
    """A list socket's message after ``todo_id`` changed (None: after a resync, everything):
    its shown rows redrawn out of band, and the todos it does not show that match its filters
    as incoming rows (``#live-incoming``); None when there is nothing to send. Reads in the
    human's scope, one query for the rows (two on a resync's first page)."""
    scope = Scope.of_human(human_id)
    new: list[Todo] = []
    if todo_id is None:
        shown = queries.listed_todos(scope, watch.rows)
        if watch.insert:
            page = queries.todo_page(scope, watch.filters)
            new = [todo for todo in page.todos if watch.fits(todo)]
    elif todo_id in watch.rows:
        shown = queries.listed_todos(scope, [todo_id])
    else:
        shown = []
        if len(watch.rows) < LIVE_ROWS_MAX:
            new = [
                t for t in queries.listed_todos(scope, [todo_id], watch.filters) if watch.fits(t)
            ]
    if not shown and not new:
        return None
    html = _render_rows(shown, oob=True)
    if new:
        watch.rows.update(todo.id for todo in new)
        incoming = _render_rows(new, oob=False)
        html += f'<tbody hx-swap-oob="beforeend:#live-incoming">{incoming}</tbody>'
    return html


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
                waterfall = attempt_waterfall_html(trail, open_group, row, oob=True)
                open_group_html += f"\n{heartbeat}\n{waterfall}"
            else:
                open_group_html += "\n"
    context = {
        "todo": todo,
        "trail": trail,  # the count above the trail (attempts not shown, activity cut)
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
    keys: list[Owner]
    watermark: Watermark | None
    watch: ListWatch | None
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
            self.watch = None if self.watermark is not None else ListWatch.parse(query)
        except ValueError:
            await self.accept()
            await self.close(code=CLOSE_BAD_REQUEST)
            return
        self.human_id = user.pk
        cookies = self.scope.get("cookies", {})
        self.csrf_token = _masked_csrf_token(cookies.get(settings.CSRF_COOKIE_NAME))
        # Register before the first read: a change committed meanwhile is pushed again, never
        # lost. The feed runs by now (switchboard/asgi.py starts it before the first request).
        self.keys = await dbthread.run(_keys, self.human_id)
        for key in self.keys:
            _sockets.setdefault(key, set()).add(self.channel_name)
        self.joined = True
        await self.accept()
        if self.watermark is not None:
            await self._push_trail()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        # However the consumer ends. Its layer's receive raises when Redis goes away (a restart),
        # and the consumer then dies without its disconnect handler: a socket left registered
        # would have the relay send every change of its owner's todos to a channel nobody reads
        # (channels_redis answers ChannelFull once a hundred wait), for as long as the process
        # lives. bench/soak.py's Redis restart found it.
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._leave()

    async def disconnect(self, code: int) -> None:
        self._leave()

    def _leave(self) -> None:
        if self.joined:
            self.joined = False
            for key in self.keys:
                names = _sockets.get(key)
                if names is not None:
                    names.discard(self.channel_name)
                    if not names:
                        del _sockets[key]

    async def todo_changed(self, event: dict[str, Any]) -> None:
        todo_id = event.get("todo_id")
        if self.watermark is not None:
            if todo_id == self.watermark.todo_id or event.get("resync"):
                await self._push_trail()
            return
        if self.watch is None:
            return
        if event.get("resync"):
            changed = None
        elif isinstance(todo_id, str) and todo_id and len(todo_id) <= _ID_MAX:
            changed = todo_id
        else:
            return
        html = await dbthread.run(
            list_push, self.human_id, self.watch, changed, thread_sensitive=True
        )
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
