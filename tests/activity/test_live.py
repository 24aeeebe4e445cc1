"""The live sockets in this process (activity/live.py): the product's ASGI application under
channels' WebsocketCommunicator, on the in-memory channel layer.

A page is painted with Django's test client and its socket opened with that client's cookies
at the URL the page's ``ws-connect`` names, so the watermarks are the first paint's own. The
transitions run in the thread database_sync_to_async uses, committed (the socket reads from
another connection than the test's), so their announcements reach this process's change feed
(started by the application on the test's loop) and the relay as in a server.
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connections
from django.test import Client

from activity import live
from switchboard.asgi import application
from switchboard.lib import changefeed
from switchboard.lib.changefeed import Change
from tests.base import Personas
from tests.live import run
from tests.reach import OWNER, claimed, new_todo, set_created_at
from todos import lifecycle

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://testserver")
WAIT = 3.0  # seconds a pushed fragment may take
QUIET = 0.5  # seconds "nothing arrives" is watched for


@pytest.fixture(autouse=True)
def _in_memory_layer(settings: Any) -> None:
    """This process's layer, whatever REDIS_URL says: the sockets and the relay share it."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}


def _cookie(client: Client) -> bytes:
    return "; ".join(f"{name}={morsel.value}" for name, morsel in client.cookies.items()).encode()


def ws_path(page: str) -> str:
    """The socket URL a page's ``ws-connect`` names."""
    match = re.search(r'ws-connect="([^"]*)"', page)
    assert match is not None, "the page opens no live socket"
    return html.unescape(match.group(1))


def paint(client: Client, path: str) -> str:
    # What the test committed before the page is announced before it (a barrier): the page's
    # socket then hears only what happens after it opens.
    assert changefeed.ANNOUNCER.flush()
    response = client.get(path)
    assert response.status_code == 200
    return response.content.decode()


@asynccontextmanager
async def socket(
    client: Client | None, path: str, origin: tuple[bytes, bytes] = ORIGIN
) -> AsyncIterator[WebsocketCommunicator]:
    headers = [origin]
    if client is not None:
        headers.append((b"cookie", _cookie(client)))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    try:
        yield communicator
    finally:
        await communicator.disconnect()


async def connected(communicator: WebsocketCommunicator) -> None:
    ok, code = await communicator.connect()
    assert ok, f"refused ({code})"


async def db[T](func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ORM/lifecycle/test-client work in the thread the sockets' reads use."""
    return await sync_to_async(func)(*args, **kwargs)


def live_test(coro_fn: Callable[[], Any]) -> None:
    """Run the async side; then close the connection the sockets' thread opened."""

    async def body() -> None:
        try:
            await coro_fn()
        finally:
            await sync_to_async(connections.close_all)()

    run(body())


def container(message: str, todo_id: str) -> str:
    """The live container a push replaces, whole; fails if the push has none."""
    match = re.search(
        rf'<div id="sb-trail-live-{todo_id}" class="trail-live" hx-swap-oob="outerHTML">'
        r"(.*?)</div>\s*<span id=\"sb-trail-state-",
        message,
        re.S,
    )
    assert match is not None, message
    return match.group(1)


def anchors(fragment: str) -> list[str]:
    return re.findall(r'<div class="trail-entry trail-[\w-]+" id="([\w-]+)"', fragment)


# --- who may connect -------------------------------------------------------------------------


def test_a_logged_out_socket_is_refused_before_it_is_accepted(personas: Personas) -> None:
    todo_id = new_todo(personas.endpoint_a.id).id

    async def go() -> None:
        async with socket(Client(), f"/ws/live/?todo={todo_id}") as ws:
            ok, _ = await ws.connect()
            assert not ok

    live_test(go)


def test_a_socket_opened_by_a_page_of_another_origin_is_refused(
    alice_client: Client, personas: Personas
) -> None:
    todo_id = new_todo(personas.endpoint_a.id).id
    path = ws_path(paint(alice_client, f"/todos/{todo_id}"))

    async def go() -> None:
        async with socket(alice_client, path, origin=(b"origin", b"https://evil.example")) as ws:
            ok, _ = await ws.connect()
            assert not ok

    live_test(go)


def test_a_socket_cannot_watch_another_humans_todo(
    alice_client: Client, personas: Personas
) -> None:
    bobs = new_todo(personas.endpoint_b.id).id

    async def go() -> None:
        async with socket(alice_client, f"/ws/live/?todo={bobs}&seq=0&attempt=0&open=0") as ws:
            await connected(ws)
            closed = await ws.receive_output(WAIT)
            assert closed == {"type": "websocket.close", "code": live.CLOSE_NOT_FOUND}

    live_test(go)


def test_watermarks_the_trail_page_never_writes_close_the_socket_for_good(
    alice_client: Client, personas: Personas
) -> None:
    todo_id = new_todo(personas.endpoint_a.id).id

    async def go() -> None:
        async with socket(alice_client, f"/ws/live/?todo={todo_id}&seq=-1") as ws:
            await connected(ws)
            closed = await ws.receive_output(WAIT)
            assert closed == {"type": "websocket.close", "code": live.CLOSE_BAD_REQUEST}

    live_test(go)


# --- the trail page ----------------------------------------------------------------------------


def test_on_connect_the_socket_sends_the_container_empty_when_nothing_is_new(
    alice_client: Client, personas: Personas
) -> None:
    held = claimed(personas.endpoint_a.id)
    lifecycle.heartbeat(personas.endpoint_a.id, held.todo.id, owner=OWNER, note="on the page")
    path = ws_path(paint(alice_client, f"/todos/{held.todo.id}"))
    assert "&seq=1&attempt=1&open=1" in path

    async def go() -> None:
        async with socket(alice_client, path) as ws:
            await connected(ws)
            first = await ws.receive_from(WAIT)
            assert container(first, held.todo.id).strip() == ""
            # The parts a change may alter come along, each by its id, out of band.
            for part in ("sb-trail-state-", "sb-trail-facts-", "sb-trail-actions-"):
                assert f'id="{part}{held.todo.id}" hx-swap-oob="true"' in first
            assert 'id="attempt-1-head" hx-swap-oob="true"' in first
            assert 'id="attempt-1-heartbeat" hx-swap-oob="true"' in first
            assert "csrfmiddlewaretoken" in first  # the redrawn actions still post

    live_test(go)


def test_a_board_retry_pushes_its_entry_into_the_open_pages_container(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    held = claimed(ep, max_attempts=1)
    lifecycle.fail(ep, held.todo.id, owner=OWNER, summary="broken", retryable=False)
    todo_id = held.todo.id
    path = ws_path(paint(alice_client, f"/todos/{todo_id}"))

    async def go() -> None:
        async with socket(alice_client, path) as ws:
            await connected(ws)
            assert container(await ws.receive_from(WAIT), todo_id).strip() == ""
            response = await db(alice_client.post, f"/todos/{todo_id}/retry")
            assert response.status_code == 302
            pushed = await ws.receive_from(WAIT)
            fragment = container(pushed, todo_id)
            assert anchors(fragment) == ["activity-1"]
            assert "alice</span> retried it" in fragment
            assert '<span class="badge state-pending">pending</span>' in pushed
            assert await ws.receive_nothing(QUIET)

    live_test(go)


def test_a_claim_pushes_the_count_of_attempts_above_the_trail(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep).id
    page = paint(alice_client, f"/todos/{todo_id}")
    count = f'<p class="muted small" id="sb-trail-count-{todo_id}"'
    assert f"{count}>0 attempts in all." in page

    async def go() -> None:
        async with socket(alice_client, ws_path(page)) as ws:
            await connected(ws)
            assert f'{count} hx-swap-oob="true">0 attempts in all.' in await ws.receive_from(WAIT)
            await db(lifecycle.claim, ep, todo_id, owner=OWNER)
            pushed = await ws.receive_from(WAIT)
            while "attempt-1-claim" not in pushed:  # a push per change, in order
                pushed = await ws.receive_from(WAIT)
            assert f'{count} hx-swap-oob="true">1 attempt in all.' in pushed

    live_test(go)


def test_a_reconnect_resends_everything_since_the_first_paint_once(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    held = claimed(ep)
    todo_id = held.todo.id
    path = ws_path(paint(alice_client, f"/todos/{todo_id}"))

    def note(text: str) -> None:
        lifecycle.heartbeat(ep, todo_id, owner=OWNER, note=text)

    async def go() -> None:
        async with socket(alice_client, path) as ws:
            await connected(ws)
            await ws.receive_from(WAIT)
            await db(note, "first note")
            before_drop = container(await ws.receive_from(WAIT), todo_id)
            assert anchors(before_drop) == ["activity-1"]
        # Dropped; a note arrives meanwhile, and the attempt ends.
        await db(note, "second note")
        await db(lifecycle.complete, ep, todo_id, owner=OWNER, summary="done")
        async with socket(alice_client, path) as ws:
            await connected(ws)
            resynced = container(await ws.receive_from(WAIT), todo_id)
            assert anchors(resynced) == ["activity-1", "activity-2", "attempt-1-end"]
            assert resynced.count("first note") == resynced.count("second note") == 1
            # The changes' own announcements may reach the new socket after its first push
            # (they travel through the database): a later push is the same whole container.
            while not await ws.receive_nothing(QUIET):
                again = container(await ws.receive_from(WAIT), todo_id)
                assert anchors(again) == ["activity-1", "activity-2", "attempt-1-end"]

    live_test(go)


def test_a_plain_heartbeat_pushes_nothing(alice_client: Client, personas: Personas) -> None:
    ep = personas.endpoint_a.id
    held = claimed(ep)
    path = ws_path(paint(alice_client, f"/todos/{held.todo.id}"))

    async def go() -> None:
        async with socket(alice_client, path) as ws:
            await connected(ws)
            await ws.receive_from(WAIT)
            await db(lifecycle.heartbeat, ep, held.todo.id, owner=OWNER)
            assert await ws.receive_nothing(QUIET)
            await db(lifecycle.heartbeat, ep, held.todo.id, owner=OWNER, note="now a note")
            assert "now a note" in container(await ws.receive_from(WAIT), held.todo.id)

    live_test(go)


def test_alice_never_hears_of_bobs_todos(
    alice_client: Client, bob_client: Client, personas: Personas
) -> None:
    alices = claimed(personas.endpoint_a.id).todo.id
    bobs = claimed(personas.endpoint_b.id).todo.id
    alice_trail = ws_path(paint(alice_client, f"/todos/{alices}"))
    bob_trail = ws_path(paint(bob_client, f"/todos/{bobs}"))

    async def go() -> None:
        async with (
            socket(alice_client, alice_trail) as trail,
            socket(alice_client, f"/ws/live/?rows={alices},{bobs}") as rows,
            socket(bob_client, bob_trail) as bobs_trail,
        ):
            for ws in (trail, rows, bobs_trail):
                await connected(ws)
            await trail.receive_from(WAIT)
            await bobs_trail.receive_from(WAIT)
            await db(lifecycle.heartbeat, personas.endpoint_b.id, bobs, owner=OWNER, note="bob's")
            await db(lifecycle.operator_release, personas.bob.id, bobs)
            assert "bob&#x27;s" in container(await bobs_trail.receive_from(WAIT), bobs)
            assert await trail.receive_nothing(QUIET)
            assert await rows.receive_nothing(QUIET)
            # Even a message misrouted to alice's sockets shows her nothing of bob's todo: her
            # sockets read in her own scope.
            layer = get_channel_layer()
            assert layer is not None
            changed = {"type": "todo.changed", "todo_id": bobs, "state": "pending"}
            for name in live._sockets[("human", personas.alice.id)]:
                await layer.send(name, changed)
            assert await rows.receive_nothing(QUIET)

    live_test(go)


# --- the list ------------------------------------------------------------------------------------


def test_the_list_socket_redraws_a_changed_row(alice_client: Client, personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = new_todo(ep).id
    not_shown = new_todo(ep).id
    set_created_at(not_shown, 600)  # older than every row shown: not a new one
    page = paint(alice_client, "/")
    assert f'<td id="state-{todo_id}">' in page
    query = parse_qs(urlsplit(ws_path(page)).query)
    assert sorted(query["rows"][0].split(",")) == sorted([todo_id, not_shown])
    assert query["insert"] == ["1"] and "floor" not in query

    async def go() -> None:
        # A page showing one of the two, with another page after it (the floor).
        floor = "2000-01-01T00:00:00+00:00"
        path = f"/ws/live/?rows={todo_id}&insert=1&floor={quote(floor)}"
        async with socket(alice_client, path) as ws:
            await connected(ws)
            await db(lifecycle.claim, ep, todo_id, owner=OWNER, claimant="ci-bot/7")
            row = await ws.receive_from(WAIT)
            assert row.startswith(f'<tr id="row-{todo_id}" class="row" data-created=')
            assert 'hx-swap-oob="true"' in row.split(">", 1)[0]
            assert '<span class="badge state-claimed">claimed</span>' in row
            assert "ci-bot/7" in row
            assert "live-incoming" not in row

    live_test(go)


def test_a_new_todo_matching_the_filter_is_sent_as_an_incoming_row(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    shown = new_todo(ep, "work").id
    page = paint(alice_client, "/?queue=work")
    path = ws_path(page)
    assert "queue=work" in path

    async def go() -> None:
        async with socket(alice_client, path) as ws:
            await connected(ws)
            await db(new_todo, ep, "other")  # another queue: not this list's
            await db(new_todo, personas.endpoint_b.id, "work")  # bob's
            assert await ws.receive_nothing(QUIET)
            fresh = (await db(new_todo, ep, "work", title="just in")).id
            message = await ws.receive_from(WAIT)
            assert message.startswith('<tbody hx-swap-oob="beforeend:#live-incoming">')
            assert f'<tr id="row-{fresh}" class="row"' in message
            assert 'hx-swap-oob="true"' not in message.split("<tr", 1)[1].split(">", 1)[0]
            # Sent once; from now on it is a row of the page: its claim redraws it.
            await db(lifecycle.claim, ep, fresh, owner=OWNER)
            redraw = await ws.receive_from(WAIT)
            assert redraw.startswith(f'<tr id="row-{fresh}"') and "claimed" in redraw
            assert shown in path

    live_test(go)


def test_another_sort_counts_only_todos_newer_than_the_page(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    old = new_todo(ep).id
    new_todo(ep)
    query = parse_qs(urlsplit(ws_path(paint(alice_client, "/?sort=title"))).query)
    assert "insert" not in query and query["sort"] == ["title"]
    # A page that does not show ``old`` (as a later page would not).
    path = f"/ws/live/?sort=title&rows=&floor={quote(query['floor'][0])}"

    async def go() -> None:
        async with socket(alice_client, path) as ws:
            await connected(ws)
            await db(lifecycle.claim, ep, old, owner=OWNER)
            fresh = (await db(new_todo, ep)).id
            message = await ws.receive_from(WAIT)
            assert f'id="row-{fresh}"' in message and f'id="row-{old}"' not in message

    live_test(go)


def test_a_resync_re_reads_every_row_in_one_query(
    personas: Personas, django_assert_max_num_queries: Any
) -> None:
    ep = personas.endpoint_a.id
    rows = [claimed(ep, owner=f"human:{personas.bob.id}").todo.id for _ in range(6)]
    missed = new_todo(ep).id
    watch = live.ListWatch.parse({"rows": [",".join(rows)], "insert": ["1"]})
    # The rows (one query), the first page for what the socket missed (one), their holders'
    # names (one), however many rows the page shows.
    with django_assert_max_num_queries(3):
        message = live.list_push(personas.alice.id, watch, None)
    assert message is not None
    for todo_id in rows:
        assert f'<tr id="row-{todo_id}" class="row"' in message
    incoming = message.split('<tbody hx-swap-oob="beforeend:#live-incoming">', 1)[1]
    assert f'id="row-{missed}"' in incoming and missed in watch.rows
    assert "operator bob" in message


# --- the relay -----------------------------------------------------------------------------------


def test_the_relay_logs_a_layer_that_is_down_and_returns(
    personas: Personas, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def down() -> None:
        raise ConnectionError("layer down")

    monkeypatch.setattr(live, "get_channel_layer", down)
    monkeypatch.setattr(live, "_sockets", {("human", personas.alice.id): {"inbox"}})
    held = claimed(personas.endpoint_a.id)
    change = Change(changefeed.CHANGED, held.todo.id, personas.endpoint_a.id, "default", "claimed")

    async def go() -> None:
        live.relay(change)
        while live._tasks:
            await asyncio.sleep(0.01)

    live_test(go)
    assert "not sent" in caplog.text


def test_a_send_the_layer_refuses_once_is_tried_again_so_the_page_is_not_left_stale(
    personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Redis layer refuses the first send on each pooled connection after Redis restarted
    (bench/soak.py found it): the relay tries again, and a socket whose send failed hears the
    change all the same, while another socket's send is not held up by it."""
    monkeypatch.setattr(live, "SEND_RETRY_SECONDS", (0.05, 0.05))
    held = claimed(personas.endpoint_a.id)
    change = Change(changefeed.CHANGED, held.todo.id, personas.endpoint_a.id, "default", "claimed")
    refused: list[str] = []

    async def go() -> None:
        layer = get_channel_layer()
        assert layer is not None
        flaky, steady = await layer.new_channel(), await layer.new_channel()
        send = layer.send

        async def refuse_flakys_first(name: str, message: dict[str, Any]) -> None:
            if name == flaky and not refused:
                refused.append(name)
                raise ConnectionError("Connection closed by server.")
            await send(name, message)

        monkeypatch.setattr(layer, "send", refuse_flakys_first)
        live._sockets[("human", personas.alice.id)] = {flaky, steady}
        try:
            live.relay(change)
            expected = {"type": "todo.changed", "todo_id": held.todo.id, "state": "claimed"}
            assert await asyncio.wait_for(layer.receive(steady), WAIT) == expected
            assert await asyncio.wait_for(layer.receive(flaky), WAIT) == expected
        finally:
            live._sockets.clear()

    live_test(go)
    assert refused  # the first send to the flaky socket was refused, and it still heard


def test_a_socket_whose_layer_fails_is_forgotten_by_the_relay(
    alice_client: Client, personas: Personas, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Redis layer's receive raises when Redis goes away, and the consumer dies without its
    disconnect handler; it must not stay registered for the relay to fill its channel."""
    todo_id = new_todo(personas.endpoint_a.id).id
    path = ws_path(paint(alice_client, f"/todos/{todo_id}"))
    registered: list[str] = []

    async def go() -> None:
        layer = get_channel_layer()
        assert layer is not None

        async def receive_until_redis_goes(channel: str) -> dict[str, Any]:
            # Once the socket has registered, its layer fails as Redis's does on a restart.
            while not any(channel in names for names in live._sockets.values()):
                await asyncio.sleep(0.01)
            registered.append(channel)
            raise ConnectionError("Connection closed by server.")

        monkeypatch.setattr(layer, "receive", receive_until_redis_goes)
        ws = WebsocketCommunicator(
            application, path, headers=[ORIGIN, (b"cookie", _cookie(alice_client))]
        )
        await connected(ws)
        with pytest.raises(ConnectionError):
            await ws.wait(WAIT)  # the application ends with its layer's error
        assert registered
        assert not any(registered[0] in names for names in live._sockets.values())

    live_test(go)


def test_the_relay_sends_only_to_the_owning_humans_sockets_in_this_process(
    personas: Personas,
) -> None:
    async def go() -> None:
        layer = get_channel_layer()
        assert layer is not None
        await changefeed.FEED.start()  # as the first request of a server does
        inboxes = {}
        for human in (personas.alice, personas.bob):
            inboxes[human.id] = await layer.new_channel()
            live._sockets[("human", human.id)] = {inboxes[human.id]}
        try:
            todo = await db(new_todo, personas.endpoint_b.id)
            message = await asyncio.wait_for(layer.receive(inboxes[personas.bob.id]), WAIT)
            assert message == {"type": "todo.changed", "todo_id": todo.id, "state": "pending"}
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(layer.receive(inboxes[personas.alice.id]), QUIET)
        finally:
            live._sockets.clear()

    live_test(go)


def _terminate(pid: int) -> None:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_after_the_feed_reconnects_an_open_page_re_reads(
    alice_client: Client, personas: Personas
) -> None:
    ep = personas.endpoint_a.id
    held = claimed(ep)
    todo_id = held.todo.id
    path = ws_path(paint(alice_client, f"/todos/{todo_id}"))

    async def go() -> None:
        async with socket(alice_client, path) as ws:
            await connected(ws)
            await ws.receive_from(WAIT)
            pid = changefeed.FEED.backend_pid
            assert pid is not None
            before = changefeed.FEED.connections
            await db(_terminate, pid)
            # The feed comes back (backoff from 0.2 s) and tells every consumer to re-read:
            # the page is sent its container again, unasked.
            assert container(await ws.receive_from(WAIT), todo_id).strip() == ""
            assert changefeed.FEED.connections == before + 1
            assert changefeed.FEED.backend_pid != pid

    live_test(go)


# --- teams ---------------------------------------------------------------------------------------


def test_every_member_of_the_owning_team_hears_its_todos_and_no_one_else(
    personas: Personas,
) -> None:
    """A team's endpoint: alice (its admin) and carol (a member) each get the changed row's
    state cell on their list socket; bob, outside the team, gets nothing."""
    from switchboard import teams
    from tests.factories import EndpointFactory, HumanFactory

    carol = HumanFactory(username="carol")
    team = teams.create_team("ops", personas.alice)
    teams.add_member(team, carol)
    ep = EndpointFactory(owner=None, team=team, slug="agent-t").id
    todo_id = new_todo(ep).id
    clients = {}
    for human in (personas.alice, carol, personas.bob):
        clients[human.username] = Client()
        clients[human.username].force_login(human)
    assert f'<td id="state-{todo_id}">' in paint(clients["carol"], "/")

    async def go() -> None:
        path = f"/ws/live/?rows={todo_id}"
        async with (
            socket(clients["alice"], path) as alice,
            socket(clients["carol"], path) as carol_ws,
            socket(clients["bob"], path) as bob,
        ):
            for ws in (alice, carol_ws, bob):
                await connected(ws)
            await db(lifecycle.claim, ep, todo_id, owner=OWNER)
            for ws in (alice, carol_ws):
                cell = await ws.receive_from(WAIT)
                assert '<span class="badge state-claimed">claimed</span>' in cell
            assert await bob.receive_nothing(QUIET)

    live_test(go)
