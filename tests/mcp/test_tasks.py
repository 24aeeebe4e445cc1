"""Requesters over MCP: ``submit_todo`` and MCP Tasks in both shapes, against daphne.

The 2026-07-28 shape is driven by the official client SDK, which has no Tasks runtime but lets
a client extension claim a result shape: ``TasksExtension`` below declares
``io.modelcontextprotocol/tasks``, claims ``resultType: "task"`` and resolves it by polling
``tasks/get`` through the SDK's own session, as a Tasks client would. What the SDK cannot send
(the 2025-11-25 ``params.task``, ``tasks/result``, ``tasks/list``, ``tasks/update`` with a
chosen answer, malformed input) goes as raw JSON-RPC (tests/mcp/wire.py). Agents on another
key of the same endpoint claim and finish the work over MCP, as real agents would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from typing import Any, Literal

import httpx2
import pytest
from a2a.types import GetTaskRequest, TaskState
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, Request, RequestParams, Result
from pydantic import ConfigDict

from mcp_server import registry
from switchboard.credentials import mint_key
from switchboard.models import A2A_VERBS, DRAIN_VERBS, Verb
from tests.a2a.test_a2a import a2a
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.mcp.conftest import LiveServer, error_of, mcp_client, run
from tests.mcp.wire import (
    MODERN,
    TASKS,
    TASKS_CLIENT,
    Legacy,
    envelope,
    modern_headers,
    modern_post,
)
from todos import task_states
from todos.models import Todo

pytestmark = [pytest.mark.django_db(transaction=True)]

# Faster than the server's suggested pollIntervalMs: the test waits on agents it drives itself.
POLL_SECONDS = 0.1


# --- a Tasks client on the official SDK ---------------------------------------------------------


class GetTaskParams(RequestParams):
    task_id: str


class GetTask(Request[GetTaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: GetTaskParams
    name_param = "taskId"


class DetailedTask(Result):
    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None


class CreatedTask(Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TasksExtension(ClientExtension):
    """Declares the extension; a task result is polled with tasks/get until it finishes."""

    identifier = TASKS

    def __init__(self) -> None:
        self.created: list[CreatedTask] = []
        self.seen: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def resolve(self, created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        self.created.append(created)
        while True:
            got = await ctx.session.send_request(
                GetTask(params=GetTaskParams(task_id=created.task_id)), DetailedTask
            )
            self.seen.append(got.status)
            if got.status in ("completed", "failed", "cancelled"):
                assert got.result is not None or got.status != "completed", got
                return CallToolResult.model_validate(got.result or {"content": []})
            await asyncio.sleep(POLL_SECONDS)


@asynccontextmanager
async def tasks_client(url: str, key: str, extension: TasksExtension) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(
            streamable_http_client(url, http_client=http), mode=MODERN, extensions=[extension]
        ) as client,
    ):
        yield client


# --- raw JSON-RPC ---------------------------------------------------------------------


def requester(owner: Any, slug: str, *, a2a_too: bool = False) -> tuple[Any, str, str]:
    """An endpoint whose requester submits over MCP and whose agents drain it: two keys."""
    verbs = [*DRAIN_VERBS, Verb.REQUEST_INPUT, Verb.SUBMIT, *(A2A_VERBS if a2a_too else ())]
    endpoint = EndpointFactory(owner=owner, slug=slug, verbs=verbs)
    _, requester_key = mint_key(endpoint)
    _, agent_key = mint_key(endpoint)
    return endpoint, requester_key, agent_key


def modern_call(
    url: str,
    key: str,
    method: str,
    params: dict[str, Any],
    *,
    name: str | None = None,
    send_name: bool = True,
) -> httpx2.Response:
    """A 2026-07-28 request from a client that declares Tasks (``modern_post``)."""
    return modern_post(
        url, key, method, params, capabilities=TASKS_CLIENT, name=name, send_name=send_name
    )


async def claim(agent: Client, queue: str) -> dict[str, Any]:
    """claim_next until the agent holds a todo (the submission may still be in flight)."""
    for _ in range(200):
        result = await agent.call_tool("claim_next", {"queue": queue})
        assert not result.is_error, result
        assert isinstance(result.structured_content, dict)
        if not result.structured_content["empty"]:
            return result.structured_content
        await asyncio.sleep(0.05)
    raise AssertionError(f"nothing to claim on {queue}")


async def agent_call(agent: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await agent.call_tool(tool, arguments)
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict)
    return result.structured_content


# --- the tests -----------------------------------------------------------------------------------


def test_a_task_submitted_over_mcp_is_completed_by_an_agent_on_another_key(
    live: LiveServer, personas: Personas
) -> None:
    """The official client declares Tasks, submit_todo answers a task, an agent on another
    key claims and completes it, and the polled task ends completed with the result inlined."""
    _, requester_key, agent_key = requester(personas.alice, "asker")
    url = live.mcp_url("asker")
    extension = TasksExtension()

    async def scenario() -> CallToolResult:
        async with (
            tasks_client(url, requester_key, extension) as asker,
            mcp_client(url, agent_key, MODERN) as agent,
        ):
            listed = {t.name: t for t in (await asker.list_tools()).tools}
            assert "submit_todo" in listed
            call = asyncio.create_task(
                asker.call_tool(
                    "submit_todo",
                    {
                        "queue": "reviews",
                        "title": "Review PR 7",
                        "payload": {"pr": 7},
                        "priority": 3,
                        "finish_by": "+2h",
                    },
                )
            )
            held = await claim(agent, "reviews")
            assert held["todo"]["title"] == "Review PR 7" and held["todo"]["priority"] == 3
            await agent_call(
                agent, "complete", id=held["todo"]["id"], result={"ok": True}, summary="LGTM"
            )
            return await asyncio.wait_for(call, 30)

    final = run(scenario())
    assert not final.is_error, final
    assert isinstance(final.structured_content, dict)
    out = final.structured_content
    assert out["todo"]["state"] == "completed" and out["todo"]["result"] == {"ok": True}
    assert out["summary"] == "LGTM"
    [created] = extension.created
    assert created.task_id == out["todo"]["id"] and created.status == "working"
    assert created.poll_interval_ms and extension.seen[-1] == "completed"


def test_a_plain_submit_without_tasks_answers_the_todo(
    live: LiveServer, personas: Personas
) -> None:
    _, requester_key, _ = requester(personas.alice, "plain")
    url = live.mcp_url("plain")
    for mode in (MODERN, "legacy"):

        async def submit() -> dict[str, Any]:
            async with mcp_client(url, requester_key, mode) as client:  # noqa: B023
                return await agent_call(client, "submit_todo", queue="q", title="t")

        out = run(submit())
        assert out["deduplicated"] is False and out["todo"]["state"] == "pending"
        got = run(_get_todo(url, requester_key, out["todo"]["id"]))
        assert got["todo"]["id"] == out["todo"]["id"]


def test_submit_todo_takes_a_cost_ceiling_checked_as_a2a_and_enqueue_check_it(
    live: LiveServer, personas: Personas
) -> None:
    """``max_cost_usd`` reaches the todo (get_todo shows it); a negative, non-numeric or
    too-fine value is the tool error ``invalid`` naming the field, and creates nothing."""
    _, requester_key, _ = requester(personas.alice, "capped")
    url = live.mcp_url("capped")

    async def submit(**arguments: Any) -> CallToolResult:
        async with mcp_client(url, requester_key, MODERN) as client:
            return await client.call_tool("submit_todo", {"queue": "q", **arguments})

    capped = run(submit(max_cost_usd=0.25))
    assert not capped.is_error, capped
    assert isinstance(capped.structured_content, dict)
    todo_id = capped.structured_content["todo"]["id"]
    assert Todo.objects.get(id=todo_id).max_cost_usd == Decimal("0.25")
    assert run(_get_todo(url, requester_key, todo_id))["todo"]["max_cost_usd"] == 0.25
    uncapped = run(submit(max_cost_usd=None))
    assert isinstance(uncapped.structured_content, dict)
    assert Todo.objects.get(id=uncapped.structured_content["todo"]["id"]).max_cost_usd is None

    before = Todo.objects.count()
    for bad in (-1, "a lot", 0.0000001, 2_000_000, True):
        refused = error_of(run(submit(max_cost_usd=bad)))
        assert refused["code"] == "invalid", (bad, refused)
        assert refused["message"].startswith("max_cost_usd: "), (bad, refused)
    assert Todo.objects.count() == before
    # The legacy era's pipeline (the SDK's) checks it the same way.

    async def legacy_submit() -> CallToolResult:
        async with mcp_client(url, requester_key, "legacy") as client:
            return await client.call_tool("submit_todo", {"queue": "q", "max_cost_usd": -0.5})

    assert error_of(run(legacy_submit()))["message"].startswith("max_cost_usd: ")


async def _get_todo(url: str, key: str, todo_id: str) -> dict[str, Any]:
    async with mcp_client(url, key, MODERN) as client:
        return await agent_call(client, "get_todo", id=todo_id)


def test_submit_without_the_verb_is_forbidden_and_params_task_is_refused(
    live: LiveServer, personas: Personas
) -> None:
    url = live.mcp_url(personas.endpoint_a.slug)

    async def submit() -> CallToolResult:
        async with mcp_client(url, personas.key_a, MODERN) as client:
            return await client.call_tool("submit_todo", {"queue": "q"})

    assert error_of(run(submit()))["code"] == "forbidden"
    before = Todo.objects.count()
    session = Legacy(url, personas.key_a)
    refused = session.post(
        "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}, "task": {"ttl": 1000}}
    )
    assert refused.status_code == 200 and refused.json()["error"]["code"] == -32601
    # A task on a tool that never runs as one is refused the same way, before it runs.
    claimed = session.post(
        "tools/call", {"name": "claim_next", "arguments": {"queue": "q"}, "task": {}}
    )
    assert claimed.json()["error"]["code"] == -32601
    assert Todo.objects.count() == before


def test_an_endpoint_without_submit_is_served_the_tasks_its_handshake_declares_as_none(
    live: LiveServer, personas: Personas
) -> None:
    """The handshake declares tasks for every endpoint; one that cannot submit has none: an
    empty list, and a task id unknown as another endpoint's is (not -32601, which would deny
    the capability the handshake declared)."""
    _, requester_key, _ = requester(personas.alice, "front")
    submitted = Legacy(live.mcp_url("front"), requester_key).result(
        "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}, "task": {"ttl": 60000}}
    )
    session = Legacy(live.mcp_url(personas.endpoint_a.slug), personas.key_a)
    assert "tasks" in session.capabilities
    assert session.result("tasks/list", {}) == {"tasks": []}
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        for task_id in ("td_nope", submitted["task"]["taskId"]):
            refused = session.post(method, {"taskId": task_id}).json()["error"]
            assert refused["code"] == -32602, (method, refused)


def test_the_input_required_round_trip_through_tasks_update(
    live: LiveServer, personas: Personas
) -> None:
    _, requester_key, agent_key = requester(personas.alice, "asks")
    url = live.mcp_url("asks")
    created = modern_call(
        url,
        requester_key,
        "tools/call",
        {"name": "submit_todo", "arguments": {"queue": "q", "title": "which?"}},
    )
    assert created.status_code == 200, created.text
    task = created.json()["result"]
    assert task["resultType"] == "task" and task["status"] == "working"
    task_id = task["taskId"]

    # Nothing is asked yet: tasks/update is invalid params.
    early = modern_call(
        url, requester_key, "tasks/update", {"taskId": task_id, "inputResponses": {}}
    )
    assert early.status_code == 400 and early.json()["error"]["code"] == -32602

    async def ask() -> None:
        async with mcp_client(url, agent_key, MODERN) as agent:
            held = await claim(agent, "q")
            await agent_call(
                agent, "request_input", id=held["todo"]["id"], question="Which branch?"
            )

    run(ask())
    waiting = modern_call(url, requester_key, "tasks/get", {"taskId": task_id}).json()["result"]
    assert waiting["status"] == "input_required" and waiting["statusMessage"] == "Which branch?"
    [(key, request)] = waiting["inputRequests"].items()
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "Which branch?"

    # A malformed answer is invalid params, and the holder stays waiting.
    for malformed in (
        "main",
        {"action": "explode", "content": {"answer": "main"}},
        {"action": 5},
        {"action": "accept"},
        {"action": "accept", "content": [1]},
        {"action": "accept", "content": {"answer": 5}},
        {"action": "accept", "content": {"answer": "x" * 4097}},
        {"action": "accept", "content": {"note": "x" * 20_000}},
        {"action": "decline", "content": {"answer": "no"}},
    ):
        refused = modern_call(
            url,
            requester_key,
            "tasks/update",
            {"taskId": task_id, "inputResponses": {key: malformed}},
        )
        assert refused.status_code == 400, (malformed, refused.text)
        assert refused.json()["error"]["code"] == -32602, malformed
    still = modern_call(url, requester_key, "tasks/get", {"taskId": task_id}).json()["result"]
    assert still["status"] == "input_required"

    answered = modern_call(
        url,
        requester_key,
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {key: {"action": "accept", "content": {"answer": "main"}}},
        },
    )
    assert answered.status_code == 200, answered.text
    assert answered.json()["result"]["resultType"] == "complete"
    again = modern_call(url, requester_key, "tasks/get", {"taskId": task_id}).json()["result"]
    assert again["status"] == "working" and "inputRequests" not in again

    async def read_answer() -> dict[str, Any]:
        async with mcp_client(url, agent_key, MODERN) as agent:
            return await agent_call(agent, "get_todo", id=task_id)

    response = run(read_answer())["todo"]["input_request"]["response"]
    assert response["text"] == "main" and response["from"].startswith("requester:")


def test_tasks_cancel_reaches_the_holders_next_heartbeat(
    live: LiveServer, personas: Personas
) -> None:
    _, requester_key, agent_key = requester(personas.alice, "cancels")
    url = live.mcp_url("cancels")
    task_id = modern_call(
        url, requester_key, "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}}
    ).json()["result"]["taskId"]

    async def hold() -> None:
        async with mcp_client(url, agent_key, MODERN) as agent:
            await claim(agent, "q")

    run(hold())
    cancelled = modern_call(url, requester_key, "tasks/cancel", {"taskId": task_id})
    assert cancelled.status_code == 200 and cancelled.json()["result"] == {
        "resultType": "complete",
        "_meta": cancelled.json()["result"]["_meta"],
    }

    async def heartbeat() -> CallToolResult:
        async with mcp_client(url, agent_key, MODERN) as agent:
            return await agent.call_tool("heartbeat", {"id": task_id})

    assert error_of(run(heartbeat()))["code"] == "canceled"
    got = modern_call(url, requester_key, "tasks/get", {"taskId": task_id}).json()["result"]
    assert got["status"] == "cancelled"
    # The extension's cancel is cooperative: a finished task gets the same empty
    # acknowledgement (the 2025-11-25 shape's -32602 is in the legacy test) and keeps its status.
    twice = modern_call(url, requester_key, "tasks/cancel", {"taskId": task_id})
    assert twice.status_code == 200, twice.text
    assert {k: v for k, v in twice.json()["result"].items() if k != "_meta"} == {
        "resultType": "complete"
    }
    done = modern_call(
        url, requester_key, "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}}
    ).json()["result"]["taskId"]
    run(_complete(url, agent_key))
    acked = modern_call(url, requester_key, "tasks/cancel", {"taskId": done})
    assert acked.status_code == 200 and acked.json()["result"]["resultType"] == "complete"
    assert "taskId" not in acked.json()["result"]
    after = modern_call(url, requester_key, "tasks/get", {"taskId": done}).json()["result"]
    assert after["status"] == "completed" and Todo.objects.get(id=done).state == "completed"
    # An unknown id is still the not-found error.
    unknown = modern_call(url, requester_key, "tasks/cancel", {"taskId": "td_" + "c" * 20})
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == -32602


def test_the_same_todo_over_a2a_agrees(live: LiveServer, personas: Personas) -> None:
    _, requester_key, agent_key = requester(personas.alice, "both", a2a_too=True)
    url = live.mcp_url("both")
    task_id = modern_call(
        url, requester_key, "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}}
    ).json()["result"]["taskId"]

    async def a2a_state() -> int:
        async with a2a(live, "both", requester_key, "1.0") as client:
            task = await client.get_task(GetTaskRequest(id=task_id))
            return task.status.state

    def agree() -> None:
        mcp = modern_call(url, requester_key, "tasks/get", {"taskId": task_id}).json()["result"]
        row = task_states.of(Todo.objects.get(id=task_id))
        assert mcp["status"] == row.mcp_modern
        assert TaskState.Name(run(a2a_state())) == row.a2a

    agree()  # pending: submitted / working

    async def ask() -> None:
        async with mcp_client(url, agent_key, MODERN) as agent:
            held = await claim(agent, "q")
            await agent_call(agent, "request_input", id=held["todo"]["id"], question="?")

    run(ask())
    agree()  # input-required
    modern_call(url, requester_key, "tasks/cancel", {"taskId": task_id})
    agree()  # canceled / cancelled


def test_bob_cannot_get_list_or_cancel_alices_tasks(live: LiveServer, personas: Personas) -> None:
    _, alice_key, _ = requester(personas.alice, "alices")
    _, bob_key, _ = requester(personas.bob, "bobs")
    alice_url, bob_url = live.mcp_url("alices"), live.mcp_url("bobs")
    task_id = modern_call(
        alice_url, alice_key, "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}}
    ).json()["result"]["taskId"]
    unknown = "td_" + "a" * 20
    for method in ("tasks/get", "tasks/cancel"):
        answers = [
            modern_call(bob_url, bob_key, method, {"taskId": tid}) for tid in (task_id, unknown)
        ]
        # The same answer for a foreign and an unknown id: no oracle.
        assert [a.status_code for a in answers] == [400, 400]
        assert answers[0].json()["error"] == answers[1].json()["error"]
        assert answers[0].json()["error"]["message"] == "Failed to retrieve task: Task not found"
    bob = Legacy(bob_url, bob_key)
    assert bob.result("tasks/list", {})["tasks"] == []
    assert bob.post("tasks/get", {"taskId": task_id}).json()["error"]["code"] == -32602
    assert Todo.objects.get(id=task_id).state == "pending"


def test_legacy_tasks_create_get_list_result_and_cancel(
    live: LiveServer, personas: Personas
) -> None:
    endpoint, requester_key, agent_key = requester(personas.alice, "legacy")
    _, other_key = mint_key(endpoint)
    url = live.mcp_url("legacy")
    session = Legacy(url, requester_key)
    assert session.capabilities["tasks"] == {
        "list": {},
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    tools = {t["name"]: t for t in session.result("tools/list", {})["tools"]}
    assert tools["submit_todo"]["execution"] == {"taskSupport": "optional"}

    created = session.result(
        "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}, "task": {"ttl": 60000}}
    )["task"]
    assert created["status"] == "working" and created["ttl"] == 60000 and created["pollInterval"]
    second = session.result(
        "tools/call", {"name": "submit_todo", "arguments": {"queue": "q2"}, "task": {}}
    )["task"]
    # Another key of the same endpoint submits too; tasks/list is the calling key's own.
    Legacy(url, other_key).result(
        "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}, "task": {}}
    )
    page = session.result("tasks/list", {})
    assert [t["taskId"] for t in page["tasks"]] == [second["taskId"], created["taskId"]]
    got = session.result("tasks/get", {"taskId": created["taskId"]})
    assert got["taskId"] == created["taskId"] and got["status"] == "working"
    # The list shows each task as tasks/get does, its ttl included.
    assert page["tasks"][1] == got

    async def finish() -> None:
        async with mcp_client(url, agent_key, MODERN) as agent:
            held = await claim(agent, "q")
            assert held["todo"]["id"] == created["taskId"]
            await asyncio.sleep(0.3)  # tasks/result is waiting meanwhile
            await agent_call(agent, "complete", id=held["todo"]["id"], result=[1, 2])

    async def result_while_finishing() -> dict[str, Any]:
        waiting = asyncio.create_task(
            asyncio.to_thread(session.result, "tasks/result", {"taskId": created["taskId"]})
        )
        await finish()
        return await asyncio.wait_for(waiting, 30)

    final = run(result_while_finishing())
    assert final["isError"] is False and final["structuredContent"]["todo"]["result"] == [1, 2]
    assert final["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": created["taskId"]}

    cancelled = session.result("tasks/cancel", {"taskId": second["taskId"]})
    assert cancelled["status"] == "cancelled"
    # The 2025-11-25 revision: cancelling a terminal task is invalid params, in either case.
    for finished in (created["taskId"], second["taskId"]):
        refused = session.post("tasks/cancel", {"taskId": finished}).json()["error"]
        assert refused["code"] == -32602 and "terminal" in refused["message"]
    # The modern-only method is not served to a legacy session.
    assert (
        session.post("tasks/update", {"taskId": second["taskId"]}).json()["error"]["code"] == -32601
    )


def test_legacy_tasks_list_pages_past_one_page_newest_first(
    live: LiveServer, personas: Personas
) -> None:
    """More submissions than a page holds: the first page is PAGE_SIZE tasks and a cursor,
    the next the rest and none, each task once, newest first; a forged cursor is -32602."""
    _, requester_key, _ = requester(personas.alice, "pager")
    session = Legacy(live.mcp_url("pager"), requester_key)
    submitted = [
        session.result(
            "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}, "task": {}}
        )["task"]["taskId"]
        for _ in range(registry.PAGE_SIZE + 2)
    ]
    first = session.result("tasks/list", {})
    assert len(first["tasks"]) == registry.PAGE_SIZE and first["nextCursor"]
    second = session.result("tasks/list", {"cursor": first["nextCursor"]})
    assert "nextCursor" not in second
    listed = [t["taskId"] for t in first["tasks"] + second["tasks"]]
    assert listed == submitted[::-1]
    forged = session.post("tasks/list", {"cursor": "bm90IGEgY3Vyc29y"}).json()["error"]
    assert forged["code"] == -32602 and "cursor" in forged["message"]


def test_a_failed_or_rejected_tasks_result_carries_the_todos_final_state(
    live: LiveServer, personas: Personas
) -> None:
    """A dead-lettered or rejected todo ends a task in a tool error whose structuredContent is
    the todo as it ended (state, summary), on the 2026-07-28 tasks/get and the 2025-11-25
    tasks/result alike, with the error readable as the first text block."""
    # A2A's verbs bring reject, which the agent uses.
    _, requester_key, agent_key = requester(personas.alice, "ends", a2a_too=True)
    url = live.mcp_url("ends")
    session = Legacy(url, requester_key)
    rejected = modern_call(
        url, requester_key, "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}}
    ).json()["result"]["taskId"]
    dead = session.result(
        "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}, "task": {}}
    )["task"]["taskId"]

    async def end_both() -> None:
        async with mcp_client(url, agent_key, MODERN) as agent:
            first = await claim(agent, "q")
            assert first["todo"]["id"] == rejected
            await agent_call(agent, "reject", id=rejected, summary="not ours")
            second = await claim(agent, "q")
            assert second["todo"]["id"] == dead
            await agent_call(agent, "fail", id=dead, summary="red build", retryable=False)

    run(end_both())
    modern = modern_call(url, requester_key, "tasks/get", {"taskId": rejected}).json()["result"]
    assert modern["status"] == "completed" and modern["result"]["isError"] is True
    ended = modern["result"]["structuredContent"]
    assert ended["todo"]["id"] == rejected and ended["todo"]["state"] == "rejected"
    assert ended["summary"] == "not ours"
    error = json.loads(modern["result"]["content"][0]["text"])["error"]
    assert error == {"code": "rejected", "message": "not ours"}

    legacy = session.result("tasks/result", {"taskId": dead})
    assert legacy["isError"] is True
    assert legacy["structuredContent"]["todo"]["state"] == "failed"
    assert legacy["structuredContent"]["summary"] == "red build"
    assert json.loads(legacy["content"][0]["text"])["error"]["code"] == "failed"
    assert json.loads(legacy["content"][1]["text"]) == legacy["structuredContent"]


def test_bad_task_requests_are_json_rpc_errors_never_5xx(
    live: LiveServer, personas: Personas
) -> None:
    _, requester_key, _ = requester(personas.alice, "bad")
    url = live.mcp_url("bad")
    task_id = modern_call(
        url, requester_key, "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}}
    ).json()["result"]["taskId"]
    # No extension declared: -32021 naming it.
    bare = modern_post(url, requester_key, "tasks/get", {"taskId": task_id})
    assert bare.status_code == 400
    assert bare.json()["error"]["code"] == -32021
    assert TASKS in bare.json()["error"]["data"]["requiredCapabilities"]["extensions"]
    # Mcp-Name must carry the task id.
    mismatch = modern_call(url, requester_key, "tasks/get", {"taskId": task_id}, name="td_other")
    assert mismatch.status_code == 400 and mismatch.json()["error"]["code"] == -32020
    for params in ({}, {"taskId": 5}, {"taskId": "x" * 500}, {"taskId": "td_\u0000"}):
        answer = modern_call(url, requester_key, "tasks/get", params, name="")
        assert answer.status_code in (400, 200) and answer.json()["error"]["code"] in (
            -32602,
            -32020,
        )
    # Polls far faster than pollIntervalMs: answered or rate-limited, never a 5xx.
    statuses = {
        modern_call(url, requester_key, "tasks/get", {"taskId": task_id}).status_code
        for _ in range(10)
    }
    assert statuses <= {200, 429}, statuses


def test_modern_tasks_methods_without_mcp_name_are_header_mismatch(
    live: LiveServer, personas: Personas
) -> None:
    """The extension's routing rule: tasks/get, tasks/update and tasks/cancel carry the task id
    in ``Mcp-Name``; without it the request is -32020 at HTTP 400 and changes nothing."""
    _, requester_key, _ = requester(personas.alice, "unnamed")
    url = live.mcp_url("unnamed")
    task_id = modern_call(
        url, requester_key, "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}}
    ).json()["result"]["taskId"]
    for method, params in (
        ("tasks/get", {"taskId": task_id}),
        ("tasks/update", {"taskId": task_id, "inputResponses": {}}),
        ("tasks/cancel", {"taskId": task_id}),
    ):
        answer = modern_call(url, requester_key, method, params, send_name=False)
        assert answer.status_code == 400, (method, answer.text)
        assert answer.json()["error"]["code"] == -32020, (method, answer.text)
        assert "mcp-name" in answer.json()["error"]["message"].lower()
    assert Todo.objects.get(id=task_id).state == "pending"
    named = modern_call(url, requester_key, "tasks/get", {"taskId": task_id})
    assert named.status_code == 200 and named.json()["result"]["status"] == "working"


def test_notifications_tasks_on_subscriptions_listen(live: LiveServer, personas: Personas) -> None:
    """A listen stream that names the task hears its status as it changes."""
    _, requester_key, agent_key = requester(personas.alice, "hears")
    url = live.mcp_url("hears")
    task_id = modern_call(
        url, requester_key, "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}}
    ).json()["result"]["taskId"]
    body = {
        "jsonrpc": "2.0",
        "id": 42,
        "method": "subscriptions/listen",
        "params": {
            "notifications": {"taskIds": [task_id, "td_" + "b" * 20]},
            "_meta": envelope(TASKS_CLIENT),
        },
    }
    headers = modern_headers(requester_key, "subscriptions/listen")

    async def listen() -> list[dict[str, Any]]:
        heard: list[dict[str, Any]] = []
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            http.stream("POST", url, json=body, headers=headers) as response,
        ):
            assert response.status_code == 200
            finisher: asyncio.Task[None] | None = None
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                heard.append(message)
                if message["method"] == "notifications/subscriptions/acknowledged":
                    continue
                if message["params"]["status"] == "working" and finisher is None:
                    finisher = asyncio.create_task(_complete(url, agent_key))
                if message["params"]["status"] == "completed":
                    break
        return heard

    heard = run(listen())
    ack = heard[0]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"]["taskIds"] == [task_id, "td_" + "b" * 20]
    pushed = [m for m in heard[1:] if m["method"] == "notifications/tasks"]
    assert {m["params"]["taskId"] for m in pushed} == {task_id}
    assert pushed[-1]["params"]["result"]["structuredContent"]["todo"]["state"] == "completed"


async def _complete(url: str, agent_key: str) -> None:
    async with mcp_client(url, agent_key, MODERN) as agent:
        held = await claim(agent, "q")
        await agent_call(agent, "complete", id=held["todo"]["id"], summary="done")


def test_notifications_tasks_status_on_the_legacy_get_stream(
    live: LiveServer, personas: Personas
) -> None:
    """A 2025-11-25 session's GET stream hears the status of the tasks its key submitted."""
    _, requester_key, agent_key = requester(personas.alice, "hears-legacy")
    url = live.mcp_url("hears-legacy")
    session = Legacy(url, requester_key)
    task_id = session.result(
        "tools/call", {"name": "submit_todo", "arguments": {"queue": "q"}, "task": {}}
    )["task"]["taskId"]
    headers = {k: v for k, v in session.headers.items() if k != "Accept"}
    headers["Accept"] = "text/event-stream"

    async def listen() -> list[dict[str, Any]]:
        heard: list[dict[str, Any]] = []
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            http.stream("GET", url, headers=headers) as response,
        ):
            assert response.status_code == 200
            finisher: asyncio.Task[None] | None = None
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message["method"] != "notifications/tasks/status":
                    continue
                heard.append(message["params"])
                if finisher is None:
                    finisher = asyncio.create_task(_complete(url, agent_key))
                if message["params"]["status"] == "completed":
                    break
        return heard

    heard = run(asyncio.wait_for(listen(), 30))
    assert {p["taskId"] for p in heard} == {task_id}
    assert heard[0]["status"] == "working" and heard[-1]["status"] == "completed"
