"""The drain verbs over MCP with the official client SDK, in both protocol eras, against daphne.

The client validates every successful result against the tool's outputSchema itself (it raises
otherwise), so each call here also checks that structuredContent conforms.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from mcp import Client

from switchboard.credentials import mint_key
from switchboard.models import Verb
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.mcp.conftest import MODES, LiveServer, error_of, mcp_client, run
from tests.reach import expire_lease, make_retry_due
from todos import lifecycle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.parametrize("mode", MODES)]


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call ``tool``; return its structured content, asserting it succeeded."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.structured_content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def call_error(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call ``tool``; return its {code, message}, asserting it was a tool error."""
    return error_of(await client.call_tool(tool, arguments))


def _claimer_sessions(todo_id: str) -> list[str | None]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT claimer_session FROM todo_attempts WHERE todo_id = %s ORDER BY seq", [todo_id]
        )
        return [row[0] for row in cur.fetchall()]


def test_tools_list_shows_exactly_the_endpoints_verbs(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    narrow = EndpointFactory(owner=personas.alice, slug="narrow", verbs=[Verb.LIST_TODOS])
    drain_only = EndpointFactory(
        owner=personas.alice, slug="drain-only", verbs=[Verb.CLAIM_NEXT, Verb.COMPLETE]
    )
    _, narrow_key = mint_key(narrow)
    _, drain_key = mint_key(drain_only)

    async def names(slug: str, key: str) -> list[str]:
        async with mcp_client(live.mcp_url(slug), key, mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else mode)
            listed = await client.list_tools()
            for tool in listed.tools:
                assert tool.input_schema["type"] == "object"
                assert tool.output_schema is not None and tool.output_schema["type"] == "object"
            return [tool.name for tool in listed.tools]

    assert run(names("agent-a", personas.key_a)) == [
        "list_todos",
        "get_todo",
        "claim_next",
        "claim",
        "heartbeat",
        "complete",
        "fail",
        "release",
    ]
    # get_todo rides on list_todos; nothing else is implied.
    assert run(names("narrow", narrow_key)) == ["list_todos", "get_todo"]
    assert run(names("drain-only", drain_key)) == ["claim_next", "complete"]


def test_a_call_outside_the_endpoints_verbs_is_forbidden(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    narrow = EndpointFactory(owner=personas.alice, slug="narrow", verbs=[Verb.LIST_TODOS])
    _, key = mint_key(narrow)
    todo = lifecycle.create(narrow.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("narrow"), key, mode) as client:
            error = await call_error(client, "claim_next", queue="q")
            assert error["code"] == "forbidden"
            error = await call_error(client, "complete", id=todo.id)
            assert error["code"] == "forbidden"
            # get_todo is implied by list_todos.
            assert (await call(client, "get_todo", id=todo.id))["todo"]["state"] == "pending"

    run(scenario())


def test_claim_heartbeat_fail_claim_complete(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    todo = lifecycle.create(
        personas.endpoint_a.id,
        queue="ci",
        title="Fix the build",
        payload={"run": 42},
        work_order="Make CI green.",
    )
    url = live.mcp_url("agent-a")

    async def first_attempt() -> None:
        async with mcp_client(url, personas.key_a, mode) as client:
            claimed = await call(
                client, "claim_next", queue="ci", lease_ttl_seconds=60, claimant="runner/1"
            )
            assert claimed["empty"] is False
            assert claimed["todo"]["id"] == todo.id
            assert claimed["todo"]["state"] == "claimed"
            assert claimed["todo"]["owner"] == f"endpoint:{personas.endpoint_a.id}"
            assert claimed["todo"]["payload"] == {"run": 42}
            assert claimed["todo"]["work_order"] == "Make CI green."
            assert claimed["attempt_seq"] == 1
            assert claimed["prior_attempts"] == []
            assert "lease_token" not in claimed

            beat = await call(client, "heartbeat", id=todo.id, lease_ttl_seconds=120, note="50%")
            assert beat["state"] == "claimed" and beat["attempt_seq"] == 1

            failed = await call(
                client, "fail", id=todo.id, summary="tests still red", result={"exit": 1}
            )
            assert failed["state"] == "failed"
            assert failed["dead_letter"] is False
            assert failed["next_retry_at"] is not None
            assert failed["attempt_seq"] == 1

    run(first_attempt())
    make_retry_due(todo.id)

    async def second_attempt() -> None:
        async with mcp_client(url, personas.key_a, mode) as client:
            claimed = await call(client, "claim_next", queues=["other", "ci"])
            assert claimed["todo"]["id"] == todo.id
            assert claimed["attempt_seq"] == 2
            assert claimed["attempts_total"] == 2
            [prior] = claimed["prior_attempts"]
            assert prior["seq"] == 1
            assert prior["outcome"] == "failed"
            assert prior["disposition"] == "retry_scheduled"
            assert prior["died"] is False
            assert prior["summary"] == "tests still red"
            assert prior["claimant"] == "runner/1"

            done = await call(
                client,
                "complete",
                id=todo.id,
                summary="green",
                result={"exit": 0},
                artifact="https://ci.example.test/runs/43",
            )
            assert done["state"] == "completed" and done["attempt_seq"] == 2

            detail = await call(client, "get_todo", id=todo.id)
            assert detail["todo"]["result"] == {"exit": 0}
            assert detail["todo"]["dead_letter"] is False
            assert detail["attempts_total"] == 2 and detail["attempts_pruned"] == 0
            assert [a["outcome"] for a in detail["attempts"]] == ["completed", "failed"]
            assert detail["attempts"][0]["artifact"] == "https://ci.example.test/runs/43"

            assert (await call(client, "claim_next", queue="ci")) == {
                "empty": True,
                "queues": [{"queue": "ci", "reason": "empty"}],
            }

    run(second_attempt())

    # A legacy client's session labels its attempts; a modern client has none.
    sessions = _claimer_sessions(todo.id)
    if mode == "legacy":
        assert all(s is not None and s.startswith("sbs_") for s in sessions)
    else:
        assert sessions == [None, None]


def test_release_gives_the_todo_back(live: LiveServer, personas: Personas, mode: str) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            await call(client, "claim", id=todo.id)
            released = await call(client, "release", id=todo.id, summary="not mine")
            assert released["state"] == "pending" and released["owner"] is None
            again = await call(client, "claim_next", queue="q")
            assert again["prior_attempts"][0]["outcome"] == "released"
            assert again["prior_attempts"][0]["summary"] == "not mine"

    run(scenario())


def test_fail_not_retryable_dead_letters(live: LiveServer, personas: Personas, mode: str) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            await call(client, "claim", id=todo.id)
            failed = await call(client, "fail", id=todo.id, retryable=False, summary="bad input")
            assert failed["dead_letter"] is True and failed["next_retry_at"] is None
            detail = await call(client, "get_todo", id=todo.id)
            assert detail["todo"]["dead_letter"] is True
            assert detail["attempts"][0]["disposition"] == "dead_lettered"

    run(scenario())


def test_the_fence_a_stale_token_gets_the_same_conflict_as_a_non_holder(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")
    url = live.mcp_url("agent-a")
    tokens: dict[str, str] = {}

    async def first_holder() -> None:
        async with mcp_client(url, personas.key_a, mode) as client:
            claimed = await call(client, "claim_next", queue="q", require_fence=True)
            token = claimed["lease_token"]
            tokens["first"] = token
            # Without the token, or with another valid-looking one: not the holder.
            missing = await call_error(client, "heartbeat", id=todo.id)
            wrong = await call_error(
                client, "heartbeat", id=todo.id, lease_token="AAAAAAAAAAAAAAAAAAAAAA"
            )
            assert missing == wrong and missing["code"] == "conflict"
            # A token that cannot be one is the caller's bug, said plainly.
            garbled = await call_error(client, "heartbeat", id=todo.id, lease_token="%%%")
            assert garbled["code"] == "invalid"
            beat = await call(client, "heartbeat", id=todo.id, lease_token=token)
            assert beat["state"] == "claimed"

    run(first_holder())
    # The first worker stalls; its lease lapses and a second worker takes the todo over.
    expire_lease(todo.id)

    async def takeover() -> None:
        async with mcp_client(url, personas.key_a, mode) as client:
            claimed = await call(client, "claim", id=todo.id, require_fence=True)
            assert claimed["lease_token"] != tokens["first"]
            assert claimed["prior_attempts"][0]["outcome"] == "lease_expired"
            assert claimed["prior_attempts"][0]["died"] is True
            tokens["second"] = claimed["lease_token"]
            stale = await call_error(
                client, "complete", id=todo.id, lease_token=tokens["first"], summary="late"
            )
            assert stale["code"] == "conflict"
            tokens["stale_message"] = stale["message"]

    run(takeover())
    # The owning human takes the todo from the Board: now the agent is plainly not the holder.
    expire_lease(todo.id)
    lifecycle.operator_claim(personas.alice.pk, todo.id)

    async def non_holder() -> None:
        async with mcp_client(url, personas.key_a, mode) as client:
            error = await call_error(
                client, "complete", id=todo.id, lease_token=tokens["second"], summary="late"
            )
            assert error == {"code": "conflict", "message": tokens["stale_message"]}

    run(non_holder())


def test_a_foreign_todo_is_not_found_exactly_like_an_unknown_one(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    bobs = lifecycle.create(personas.endpoint_b.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            for tool in ("get_todo", "claim", "heartbeat", "complete", "fail", "release"):
                foreign = await call_error(client, tool, id=bobs.id)
                unknown = await call_error(client, tool, id="td_aaaaaaaaaaaaaaaaaaaa")
                assert foreign["code"] == unknown["code"] == "not_found"
                assert foreign["message"].replace(bobs.id, "ID") == unknown["message"].replace(
                    "td_aaaaaaaaaaaaaaaaaaaa", "ID"
                )
            listed = await call(client, "list_todos")
            assert listed["todos"] == []
            assert (await call(client, "claim_next", queue="q")) == {
                "empty": True,
                "queues": [{"queue": "q", "reason": "empty"}],
            }

    run(scenario())


def test_list_todos_pages_by_keyset_and_filters(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    ids = [lifecycle.create(personas.endpoint_a.id, queue="q", title=f"t{i}").id for i in range(5)]
    other = lifecycle.create(personas.endpoint_a.id, queue="other").id
    lifecycle.claim(personas.endpoint_a.id, ids[0], owner="endpoint:agent-a")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            seen: list[str] = []
            cursor = None
            while True:
                page = await call(client, "list_todos", queue="q", limit=2, cursor=cursor)
                assert len(page["todos"]) <= 2
                assert all("payload" not in row for row in page["todos"])
                seen += [row["id"] for row in page["todos"]]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert seen == list(reversed(ids))  # newest first, each exactly once
            pending = await call(client, "list_todos", state="pending")
            assert {row["id"] for row in pending["todos"]} == {*ids[1:], other}
            error = await call_error(client, "list_todos", cursor="not-a-cursor")
            assert error["code"] == "invalid"

    run(scenario())


def test_lease_ttl_is_bounded(live: LiveServer, personas: Personas, mode: str) -> None:
    todo = lifecycle.create(personas.endpoint_a.id, queue="q")

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            for ttl in (9, 86_401, 0, -5):
                error = await call_error(client, "claim_next", queue="q", lease_ttl_seconds=ttl)
                assert error["code"] == "invalid" and "lease_ttl_seconds" in error["message"]
            claimed = await call(client, "claim_next", queue="q", lease_ttl_seconds=10)
            assert claimed["todo"]["id"] == todo.id
            error = await call_error(client, "heartbeat", id=todo.id, lease_ttl_seconds=86_401)
            assert error["code"] == "invalid"
            await call(client, "heartbeat", id=todo.id, lease_ttl_seconds=86_400)

    run(scenario())


def test_arguments_of_the_wrong_type_are_invalid_tool_errors(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            cases: list[tuple[str, dict[str, Any], str]] = [
                ("get_todo", {"id": 123}, "id"),
                ("get_todo", {}, "'id' is a required property"),
                ("claim_next", {"queue": ["q"]}, "queue"),
                ("claim_next", {"queue": "q", "require_fence": "yes"}, "require_fence"),
                ("claim_next", {"queue": "q", "queues": ["q"]}, "exactly one"),
                ("claim_next", {}, "exactly one"),
                ("claim_next", {"queue": "q", "extra": 1}, "extra"),
                ("list_todos", {"limit": "10"}, "limit"),
                ("list_todos", {"state": "nope"}, "state"),
                ("fail", {"id": "td_x", "retry_after_seconds": 0}, "retry_after_seconds"),
                ("complete", {"id": "td_x", "artifact": "javascript:alert(1)"}, "artifact"),
            ]
            for tool, arguments, mentions in cases:
                error = error_of(await client.call_tool(tool, arguments))
                assert error["code"] in ("invalid", "not_found"), (tool, arguments, error)
                if error["code"] == "invalid":
                    assert mentions in error["message"], (tool, arguments, error)

    run(scenario())


def test_traceparent_is_validated_and_returned(
    live: LiveServer, personas: Personas, mode: str
) -> None:
    lifecycle.create(personas.endpoint_a.id, queue="q")
    lifecycle.create(personas.endpoint_a.id, queue="q")
    good = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    async def scenario() -> None:
        async with mcp_client(live.mcp_url("agent-a"), personas.key_a, mode) as client:
            for bad in (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  # uppercase
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  # zero trace id
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  # zero parent id
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff
                good + "-extra",  # version 00 with trailing data
                "garbage",
            ):
                error = await call_error(client, "claim_next", queue="q", traceparent=bad)
                assert error["code"] == "invalid" and "traceparent" in error["message"]
            bad_meta = await client.call_tool(
                "claim_next", {"queue": "q"}, meta={"traceparent": "00-xyz"}
            )
            assert error_of(bad_meta)["code"] == "invalid"
            # Nothing was claimed by the refused calls.
            via_argument = await call(client, "claim_next", queue="q", traceparent=good)
            assert via_argument["traceparent"] == good
            assert via_argument["todo"]["attempt"] == 1
            via_meta = await client.call_tool(
                "claim_next", {"queue": "q"}, meta={"traceparent": good}
            )
            assert isinstance(via_meta.structured_content, dict)
            assert via_meta.structured_content["traceparent"] == good

    run(scenario())
