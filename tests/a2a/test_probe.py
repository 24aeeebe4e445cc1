"""Routine bad requests to /a2a answer typed JSON-RPC errors, not -32603 with an exception's
text, and log no traceback; a queue must be a string."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import SubscribeToTaskRequest
from a2a.utils.errors import UnsupportedOperationError

from switchboard.credentials import mint_key
from switchboard.models import A2A_VERBS, DRAIN_VERBS
from tests.a2a.test_a2a import a2a, a2a_endpoint, message, send_request
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.live import LiveServer, _start, _stop, _wait_ready, run
from todos.models import Todo

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def live_streams(daphne_env: dict[str, str], tmp_path: Path) -> Iterator[LiveServer]:
    """A server that lets an endpoint hold one stream open."""
    server = _start({**daphne_env, "SWITCHBOARD_A2A_STREAMS_PER_ENDPOINT": "1"}, tmp_path / "s.log")
    try:
        _wait_ready(server)
        yield server
    finally:
        _stop(server)


def send_message(message: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"message": message}
    if metadata is not None:
        params["metadata"] = metadata
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}


def text_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}], **extra}


CASES_1_0: list[tuple[str, bytes | dict[str, Any]]] = [
    (
        "a NUL in a task id",
        {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "td_\u0000x"}},
    ),
    (
        "1e400 in a data part",
        b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
        b'{"messageId":"m-1","role":"ROLE_USER","parts":[{"data":{"n":1e400}}]}}}',
    ),
    (
        "a NUL in a message's text",
        send_message(text_message("fix\u0000 it")),
    ),
    ("a dict as the queue", send_message(text_message("fix it", metadata={"queue": {"a": 1}}))),
    ("a number as the queue", send_message(text_message("fix it"), metadata={"queue": 5})),
    ("an unknown task", {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}),
    ("a number as an id", {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": 5}}),
    ("no parts", send_message({"messageId": "m-1", "role": "ROLE_USER", "parts": []})),
    ("not JSON", b"{nope"),
    ("an unknown method", {"jsonrpc": "2.0", "id": 1, "method": "Nope"}),
]

CASES_0_3: list[tuple[str, bytes | dict[str, Any]]] = [
    (
        "a lone surrogate in 0.3 text",
        b'{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":'
        b'{"messageId":"m-1","role":"user","kind":"message","parts":[{"kind":"text",'
        b'"text":"a \\ud800 b"}]}}}',
    ),
    (
        "a NUL in a 0.3 task id",
        {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "td_\u0000"}},
    ),
]


@pytest.mark.parametrize(("version", "cases"), [("1.0", CASES_1_0), ("0.3", CASES_0_3)])
def test_routine_bad_requests_are_typed_errors_without_a_traceback(
    live: LiveServer,
    personas: Personas,
    version: str,
    cases: list[tuple[str, bytes | dict[str, Any]]],
) -> None:
    endpoint = EndpointFactory(owner=personas.alice, slug="front", verbs=[*DRAIN_VERBS, *A2A_VERBS])
    _, key = mint_key(endpoint)
    headers = {"Authorization": f"Bearer {key}", "A2A-Version": version}
    url = live.url("/a2a/front")
    with httpx.Client(timeout=10) as http:
        for name, body in cases:
            if isinstance(body, bytes):
                response = http.post(
                    url, content=body, headers={**headers, "Content-Type": "application/json"}
                )
            else:
                response = http.post(url, json=body, headers=headers)
            assert response.status_code == 200, (name, response.text)
            error = response.json().get("error")
            assert error is not None, (name, response.text)
            assert error["code"] in (-32700, -32600, -32601, -32602, -32001), (name, error)
            assert "Traceback" not in response.text and "Error(" not in response.text, name
    assert not Todo.objects.exists()
    log = live.log.read_text(errors="replace")
    assert "Traceback" not in log, live.log_tail(4000)


def test_the_sdk_still_logs_a_malformed_request_in_the_words_the_filter_knows() -> None:
    """switchboard/lib/logfilters.py matches the SDK's messages; a new SDK wording would bring
    the tracebacks back."""
    from importlib.util import find_spec

    from switchboard.lib.logfilters import CLIENT_MISTAKES

    source = ""
    for module in ("a2a.server.routes.jsonrpc_dispatcher", "a2a.compat.v0_3.jsonrpc_adapter"):
        spec = find_spec(module)
        assert spec is not None and spec.origin is not None
        source += Path(spec.origin).read_text()
    for words in CLIENT_MISTAKES:
        assert f"'{words}'" in source, words


def test_an_endpoint_s_open_streams_are_capped(
    live_streams: LiveServer, personas: Personas
) -> None:
    _, requester, _agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> None:
        async with a2a(live_streams, "front", requester, "1.0", streaming=True) as client:
            seen: list[Any] = []

            async def follow() -> None:
                async for event in client.send_message(send_request(message("stream me"))):
                    seen.append(event)

            following = asyncio.create_task(follow())
            while not seen:
                await asyncio.sleep(0.05)
            with pytest.raises(UnsupportedOperationError, match="open streams"):
                async for _ in client.subscribe(SubscribeToTaskRequest(id=seen[0].task.id)):
                    pass
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following
            # The slot is given back when the stream ends.
            deadline = time.monotonic() + 5
            while True:
                try:
                    async for event in client.subscribe(SubscribeToTaskRequest(id=seen[0].task.id)):
                        assert event.task.id == seen[0].task.id
                        return
                except UnsupportedOperationError:
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.1)

    run(scenario())
