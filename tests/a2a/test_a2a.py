"""Todos as A2A tasks at /a2a/{slug}, driven by the A2A SDK's own client against daphne, in
protocol 1.0 and in the 0.3 compatibility mode; the agent side works over MCP with the official
MCP client, as a real agent would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.client import Client as A2aClient
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError, TaskNotFoundError, UnsupportedOperationError
from google.protobuf import json_format

from activity.models import TodoActivity
from switchboard import runtime_settings
from switchboard.credentials import mint_key
from switchboard.models import A2A_VERBS, DRAIN_VERBS
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.live import LiveServer, _start, _stop, _wait_ready, mcp_client, run
from tests.mcp.conftest import error_of

pytestmark = [pytest.mark.django_db(transaction=True)]

VERSIONS = ("1.0", "0.3")
MCP_MODE = "2026-07-28"


def a2a_endpoint(owner: Any, slug: str) -> tuple[Any, str, str]:
    """An endpoint fronting its agents over A2A: a requester key and an agent key."""
    endpoint = EndpointFactory(owner=owner, slug=slug, verbs=[*DRAIN_VERBS, *A2A_VERBS])
    _, requester_key = mint_key(endpoint)
    _, agent_key = mint_key(endpoint)
    return endpoint, requester_key, agent_key


@asynccontextmanager
async def a2a(
    live: LiveServer, slug: str, key: str, version: str, *, streaming: bool = False
) -> AsyncIterator[A2aClient]:
    """The SDK's client for /a2a/{slug}, from the served card, in ``version``."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        card = await A2ACardResolver(http, live.url(f"/a2a/{slug}")).get_agent_card()
        if version == "0.3":
            keep = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(keep)
        config = ClientConfig(httpx_client=http, streaming=streaming)
        client = ClientFactory(config).create(card)
        yield client


def message(text: str, *, queue: str | None = None, task_id: str = "") -> Message:
    out = Message(message_id=f"m-{text[:8]}", role=Role.ROLE_USER, parts=[Part(text=text)])
    if task_id:
        out.task_id = task_id
    if queue is not None:
        out.metadata.update({"queue": queue})
    return out


def send_request(msg: Message, *, immediately: bool = True) -> SendMessageRequest:
    return SendMessageRequest(
        message=msg, configuration=SendMessageConfiguration(return_immediately=immediately)
    )


async def send(client: A2aClient, msg: Message, *, immediately: bool = True) -> Task:
    events = [e async for e in client.send_message(send_request(msg, immediately=immediately))]
    assert len(events) == 1 and events[0].HasField("task"), events
    return events[0].task


async def agent_call(url: str, key: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(url, key, MCP_MODE) as agent:
        result = await agent.call_tool(tool, arguments)
    assert not result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def data(part: Part) -> Any:
    return json_format.MessageToDict(part.data) if part.HasField("data") else None


@pytest.mark.parametrize("version", VERSIONS)
def test_send_claim_complete_get(live: LiveServer, personas: Personas, version: str) -> None:
    _, requester, agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> None:
        async with a2a(live, "front", requester, version) as client:
            task = await send(client, message("Summarise the incident", queue="triage"))
            assert task.status.state == TaskState.TASK_STATE_SUBMITTED
            assert task.id.startswith("td_")

            claimed = await agent_call(live.mcp_url("front"), agent, "claim_next", queue="triage")
            assert claimed["todo"]["id"] == task.id
            assert claimed["todo"]["work_order"] == "Summarise the incident"
            assert claimed["todo"]["payload"]["parts"] == [{"text": "Summarise the incident"}]
            working = await client.get_task(GetTaskRequest(id=task.id))
            assert working.status.state == TaskState.TASK_STATE_WORKING

            await agent_call(
                live.mcp_url("front"),
                agent,
                "complete",
                id=task.id,
                result={"severity": "low"},
                summary="all quiet",
                artifact="https://example.com/report",
            )
            done = await client.get_task(GetTaskRequest(id=task.id))
            assert done.status.state == TaskState.TASK_STATE_COMPLETED
            (artifact,) = done.artifacts
            assert data(artifact.parts[0]) == {"severity": "low"}
            assert artifact.parts[1].url == "https://example.com/report"
            assert artifact.parts[2].text == "all quiet"

            # A message to a terminal task, and an unknown task id.
            with pytest.raises(UnsupportedOperationError):
                await send(client, message("more?", task_id=task.id))
            with pytest.raises(TaskNotFoundError):
                await client.get_task(GetTaskRequest(id="td_nosuchtodo"))

    run(scenario())


@pytest.mark.parametrize("version", VERSIONS)
def test_blocking_send_returns_the_completed_task(
    live: LiveServer, personas: Personas, version: str
) -> None:
    _, requester, agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> Task:
        async with a2a(live, "front", requester, version) as client:
            sending = asyncio.create_task(send(client, message("blocking"), immediately=False))
            claimed: dict[str, Any] = {"empty": True}
            while claimed["empty"]:
                await asyncio.sleep(0.2)
                claimed = await agent_call(live.mcp_url("front"), agent, "claim_next", queue="a2a")
            await agent_call(
                live.mcp_url("front"), agent, "complete", id=claimed["todo"]["id"], result=[1]
            )
            return await asyncio.wait_for(sending, 20)

    task = run(scenario())
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert data(task.artifacts[0].parts[0]) == [1]


@pytest.mark.parametrize("version", VERSIONS)
def test_input_required_round_trip(live: LiveServer, personas: Personas, version: str) -> None:
    front, requester, agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> None:
        async with a2a(live, "front", requester, version) as client:
            task = await send(client, message("Book a table"))
            await agent_call(live.mcp_url("front"), agent, "claim", id=task.id)
            asked = await agent_call(
                live.mcp_url("front"), agent, "request_input", id=task.id, question="How many?"
            )
            assert asked["state"] == "input-required"
            waiting = await client.get_task(GetTaskRequest(id=task.id))
            assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert waiting.status.message.parts[0].text == "How many?"

            resumed = await send(client, message("Four", task_id=task.id))
            assert resumed.status.state == TaskState.TASK_STATE_WORKING
            beat = await agent_call(live.mcp_url("front"), agent, "heartbeat", id=task.id)
            assert beat["input_request"]["question"] == "How many?"
            assert beat["input_request"]["response"]["text"] == "Four"
            assert beat["input_request"]["response"]["from"] == f"requester:{front.id}"
            seen = await agent_call(live.mcp_url("front"), agent, "get_todo", id=task.id)
            assert seen["todo"]["input_request"]["response"]["text"] == "Four"

            # An answer to a task that is not waiting is refused.
            with pytest.raises(UnsupportedOperationError):
                await send(client, message("Five", task_id=task.id))

            await agent_call(
                live.mcp_url("front"), agent, "reject", id=task.id, summary="fully booked"
            )
            rejected = await client.get_task(GetTaskRequest(id=task.id))
            assert rejected.status.state == TaskState.TASK_STATE_REJECTED
            assert rejected.status.message.parts[0].text == "fully booked"

    run(scenario())
    kinds = list(
        TodoActivity.objects.filter(kind="a2a_state")
        .order_by("seq")
        .values_list("detail__action", "actor_ref")
    )
    assert kinds == [
        ("interrupt", f"endpoint:{front.id}"),
        ("resume", f"requester:{front.id}"),
        ("reject", f"endpoint:{front.id}"),
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_cancel_and_list(live: LiveServer, personas: Personas, version: str) -> None:
    _, requester, _agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> None:
        async with a2a(live, "front", requester, version) as client:
            first = await send(client, message("one"))
            second = await send(client, message("two"))
            canceled = await client.cancel_task(CancelTaskRequest(id=first.id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
            with pytest.raises(A2AError):  # TaskNotCancelable
                await client.cancel_task(CancelTaskRequest(id=first.id))
            with pytest.raises(TaskNotFoundError):
                await client.cancel_task(CancelTaskRequest(id="td_unknown"))
            if version == "0.3":
                return  # the SDK's 0.3 client has no ListTasks
            listed = await client.list_tasks(ListTasksRequest())
            assert [t.id for t in listed.tasks] == [second.id, first.id]
            page = await client.list_tasks(ListTasksRequest(page_size=1))
            assert [t.id for t in page.tasks] == [second.id] and page.next_page_token
            submitted = await client.list_tasks(
                ListTasksRequest(status=TaskState.TASK_STATE_SUBMITTED)
            )
            assert [t.id for t in submitted.tasks] == [second.id]
            # A filter or a length it cannot honour is refused, never dropped: a status no task
            # has (an enum value past the defined ones), a time filter, a negative history.
            with pytest.raises(A2AError, match="status"):
                await client.list_tasks(ListTasksRequest(status=99))  # type: ignore[arg-type]
            later = ListTasksRequest()
            later.status_timestamp_after.GetCurrentTime()
            with pytest.raises(UnsupportedOperationError, match="statusTimestampAfter"):
                await client.list_tasks(later)
            with pytest.raises(A2AError, match="historyLength"):
                await client.list_tasks(ListTasksRequest(history_length=-1))
            with pytest.raises(A2AError, match="historyLength"):
                await client.get_task(GetTaskRequest(id=second.id, history_length=-1))
            assert (await client.get_task(GetTaskRequest(id=second.id, history_length=0))).id

    run(scenario())


@pytest.mark.parametrize("version", VERSIONS)
def test_streaming_follows_the_task_to_its_end(
    live: LiveServer, personas: Personas, version: str
) -> None:
    _, requester, agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> list[StreamResponse]:
        async with a2a(live, "front", requester, version, streaming=True) as client:
            seen: list[StreamResponse] = []

            async def follow() -> None:
                async for event in client.send_message(send_request(message("stream me"))):
                    seen.append(event)

            following = asyncio.create_task(follow())
            while not seen:
                await asyncio.sleep(0.1)
            todo_id = seen[0].task.id
            await agent_call(live.mcp_url("front"), agent, "claim", id=todo_id)
            await agent_call(live.mcp_url("front"), agent, "complete", id=todo_id, summary="ok")
            await asyncio.wait_for(following, 20)

            # Subscribing to a finished task is refused.
            with pytest.raises(UnsupportedOperationError):
                async for _ in client.subscribe(SubscribeToTaskRequest(id=todo_id)):
                    pass
            return seen

    seen = run(scenario())
    assert seen[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
    states = [e.status_update.status.state for e in seen if e.HasField("status_update")]
    assert states == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
    assert any(e.HasField("artifact_update") for e in seen)


@pytest.mark.parametrize("version", VERSIONS)
def test_bobs_requester_key_cannot_see_alices_tasks(
    live: LiveServer, personas: Personas, version: str
) -> None:
    a2a_endpoint(personas.alice, "alice-front")
    _, alice_key, _ = a2a_endpoint(personas.alice, "alice-front2")
    _, bob_key, _ = a2a_endpoint(personas.bob, "bob-front")

    async def scenario() -> None:
        async with a2a(live, "alice-front2", alice_key, version) as alice:
            task = await send(alice, message("secret"))
        async with a2a(live, "bob-front", bob_key, version) as bob:
            with pytest.raises(TaskNotFoundError):
                await bob.get_task(GetTaskRequest(id=task.id))
            with pytest.raises(TaskNotFoundError):
                await bob.cancel_task(CancelTaskRequest(id=task.id))
            with pytest.raises(TaskNotFoundError):
                await send(bob, message("answer", task_id=task.id))
            if version == "1.0":  # the SDK's 0.3 client has no ListTasks
                assert list((await bob.list_tasks(ListTasksRequest())).tasks) == []
        # Bob's key on Alice's endpoint is refused before any method runs.
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {bob_key}"}) as http:
            response = await http.get(live.url("/a2a/alice-front2/.well-known/agent-card.json"))
            assert response.status_code == 401
            assert response.json()["error"]["code"] == -32600

    run(scenario())


def test_card_lists_queues_as_skills(live: LiveServer, personas: Personas) -> None:
    endpoint, requester, _ = a2a_endpoint(personas.alice, "front")
    from todos import lifecycle

    lifecycle.create(endpoint.id, queue="billing", title="open")

    async def fetch() -> AgentCard:
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {requester}"}) as http:
            return await A2ACardResolver(http, live.url("/a2a/front")).get_agent_card()

    card = run(fetch())
    assert sorted(s.id for s in card.skills) == ["a2a", "billing"]
    assert {(i.protocol_version, i.url) for i in card.supported_interfaces} == {
        ("1.0", live.url("/a2a/front")),
        ("0.3", live.url("/a2a/front")),
    }
    assert card.capabilities.streaming


def test_bad_input_is_a_json_rpc_error(live: LiveServer, personas: Personas) -> None:
    _, requester, _ = a2a_endpoint(personas.alice, "front")
    plain = EndpointFactory(owner=personas.alice, slug="plain")
    _, plain_key = mint_key(plain)
    auth = {"Authorization": f"Bearer {requester}", "A2A-Version": "1.0"}
    url = live.url("/a2a/front")
    with httpx.Client(timeout=10) as http:
        for body in (b"{not json", b"[]", b'{"jsonrpc":"2.0","id":1,"method":"Nope"}'):
            response = http.post(url, content=body, headers=auth)
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("application/json")
            assert response.json()["error"]["code"] in (-32700, -32600, -32601)
        bad_params = http.post(
            url,
            json={"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": 5}},
            headers=auth,
        )
        assert bad_params.json()["error"]["code"] in (-32602, -32001)
        unknown = http.post(
            url,
            json={"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "td_x"}},
            headers=auth,
        )
        assert unknown.json()["error"]["code"] == -32001
        # A state name misspelled is refused, not read as no filter (which listed every task).
        for status in ("TASK_STATE_FAILD", "nope"):
            listed = http.post(
                url,
                json={
                    "jsonrpc": "2.0",
                    "id": 4,
                    "method": "ListTasks",
                    "params": {"status": status},
                },
                headers=auth,
            ).json()
            assert listed["id"] == 4 and listed["error"]["code"] == -32602
            assert "is not a task state" in listed["error"]["message"]
        known = {"jsonrpc": "2.0", "id": 5, "method": "ListTasks"}
        known["params"] = {"status": "TASK_STATE_WORKING"}
        assert http.post(url, json=known, headers=auth).json()["result"]["tasks"] == []
        assert http.post(url, json={}).status_code == 401
        refused = http.post(
            live.url("/a2a/plain"), json={}, headers={"Authorization": f"Bearer {plain_key}"}
        )
        assert refused.status_code == 403
        assert refused.json()["error"]["message"] == "this endpoint's verbs do not include a2a"
        lost = http.get(url + "/nowhere", headers=auth)
        assert lost.status_code == 404 and lost.json()["error"]["code"] == -32600
        big = http.post(url, content=b"x" * (65 * 1024), headers=auth)
        assert big.status_code == 413 and "error" in big.json()


@pytest.fixture
def limited(personas: Personas, daphne_env: dict[str, str], tmp_path: Path) -> Iterator[LiveServer]:
    """A fresh server (its limiter and settings cache empty) that reads low A2A limits."""
    runtime_settings.put("a2a_rate_per_address", 1000)
    runtime_settings.put("a2a_rate_per_endpoint", 2)
    server = _start(daphne_env, tmp_path / "limited.log")
    try:
        _wait_ready(server)
        yield server
    finally:
        _stop(server)


def test_a2a_is_429_with_retry_after_past_the_endpoints_rate(
    limited: LiveServer, personas: Personas
) -> None:
    _, requester, _ = a2a_endpoint(personas.alice, "front")
    auth = {"Authorization": f"Bearer {requester}", "A2A-Version": "1.0"}
    get = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "td_x"}}
    with httpx.Client(timeout=10) as http:
        answers = [http.post(limited.url("/a2a/front"), json=get, headers=auth) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert 1 <= int(answers[2].headers["retry-after"]) <= 60
    assert answers[2].json()["error"]["message"].startswith("too many requests (this endpoint)")


def test_the_holders_tools_follow_the_verbs(live: LiveServer, personas: Personas) -> None:
    _, requester, agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("front"), agent, MCP_MODE) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names[-2:] == ["request_input", "reject"]
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, MCP_MODE) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "request_input" not in names and "reject" not in names
            refused = await client.call_tool("reject", {"id": "td_x"})
            assert error_of(refused)["code"] == "forbidden"
        async with a2a(live, "front", requester, "1.0") as requester_client:
            pending = await send(requester_client, message("wait"))
            with pytest.raises(UnsupportedOperationError):  # not waiting for input
                await send(requester_client, message("answer", task_id=pending.id))
            with pytest.raises(A2AError):  # no parts
                await send(requester_client, Message(message_id="m0", role=Role.ROLE_USER))

    run(scenario())
