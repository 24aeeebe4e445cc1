"""The MCP Inspector's command line against a live server, as docs/guides/agents.md shows it.

The Inspector (the TypeScript SDK's client) validates every tool result that carries
structuredContent against the tool's outputSchema, error or not, and lints the schemas for
portability. These tests run the guide's Inspector lines as written (the URL and key aside),
plus a tool error, and fail (never skip) when npx is missing: the npm registry is reachable
wherever the tests run. ``npx`` installs the pinned packages into npm's cache on first use
(``~/.npm``, or ``NPM_CONFIG_CACHE``) and, with ``--prefer-offline``, reuses them afterwards
without asking the registry; the three calls run concurrently, so a warm run costs a few
seconds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from switchboard.credentials import mint_key
from switchboard.models import Verb
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.mcp.conftest import LiveServer
from todos import lifecycle

pytestmark = pytest.mark.django_db(transaction=True)

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "agents.md"
GUIDE_URL = "$SWITCHBOARD_URL/mcp/demo-agent"
# A first install (Node 22 and the Inspector) takes a minute or two; later runs seconds.
TIMEOUT_SECONDS = 600
TOOL_ERROR_EXIT = 5  # the Inspector's exit status for a result with isError: true


def guide_lines() -> list[str]:
    """The shell lines of the guide's "The MCP Inspector" block, continuations joined."""
    text = GUIDE.read_text()
    section = text.split("### The MCP Inspector", 1)[1]
    block = re.search(r"```sh(?: norun)?\n(.*?)```", section, re.S)
    assert block is not None, "docs/guides/agents.md lost its Inspector block"
    return [line.strip() for line in block.group(1).replace("\\\n", " ").splitlines() if line]


def run_all(commands: list[str], env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    """Run shell ``commands`` concurrently; their completed processes, in order."""
    processes = [
        subprocess.Popen(  # noqa: S602 (the guide's own shell lines)
            command,
            shell=True,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    done = []
    for command, process in zip(commands, processes, strict=True):
        out, err = process.communicate(timeout=TIMEOUT_SECONDS)
        done.append(subprocess.CompletedProcess(command, process.returncode, out, err))
    return done


def result_of(done: subprocess.CompletedProcess[str]) -> Any:
    """The first JSON value the Inspector printed (after a tool error it prints its own)."""
    assert done.stdout.strip(), (done.returncode, done.stderr[-2000:])
    value, _ = json.JSONDecoder().raw_decode(done.stdout.lstrip())
    return value


def test_the_inspector_lists_tools_without_warnings_and_accepts_a_result_and_an_error(
    live: LiveServer, personas: Personas
) -> None:
    if shutil.which("npx") is None:
        pytest.fail("npx is not on PATH: install Node.js with npm (the Inspector runs on it)")
    todo = lifecycle.create(personas.endpoint_a.id, queue="ci-failures", payload={"check": "unit"})
    listing, claiming = guide_lines()
    assert "--method tools/list" in listing and "--tool-name claim_next" in claiming
    url = live.mcp_url("agent-a")
    unknown = "td_aaaaaaaaaaaaaaaaaaaa"
    failing = claiming.split("--method", 1)[0] + (
        f"--method tools/call --tool-name complete --tool-arg id={unknown}"
    )
    env = {
        **os.environ,
        "SWITCHBOARD_KEY": personas.key_a,
        # A warm cache answers without asking the registry.
        "npm_config_prefer_offline": "true",
        "npm_config_update_notifier": "false",
    }
    listed, claimed, refused = run_all(
        [line.replace(GUIDE_URL, url) for line in (listing, claiming, failing)], env
    )

    assert listed.returncode == 0, listed.stderr[-2000:]
    tools = {tool["name"] for tool in result_of(listed)["tools"]}
    assert "claim_next" in tools and "complete" in tools
    # The Inspector's schema lint: "Schema portability: N errors, M warnings" when any.
    assert "Schema portability" not in listed.stderr, listed.stderr[-4000:]

    # A success, validated by the TypeScript SDK against claim_next's outputSchema.
    assert claimed.returncode == 0, claimed.stderr[-2000:]
    result = result_of(claimed)
    assert result["isError"] is False
    assert result["structuredContent"]["todo"]["id"] == todo.id

    # A tool error is accepted as a result (exit 5, not a schema failure) and says its code.
    assert refused.returncode == TOOL_ERROR_EXIT, (refused.stdout, refused.stderr[-2000:])
    error = result_of(refused)
    assert error["isError"] is True and "structuredContent" not in error
    assert json.loads(error["content"][0]["text"])["error"]["code"] == "not_found"


def test_the_inspector_lists_submit_todos_task_support(
    live: LiveServer, personas: Personas
) -> None:
    """A requester endpoint's tools/list, as the Inspector shows it: submit_todo may run as a
    task (the 2025-11-25 ``execution.taskSupport``; docs/guides/requesters.md)."""
    if shutil.which("npx") is None:
        pytest.fail("npx is not on PATH: install Node.js with npm (the Inspector runs on it)")
    endpoint = EndpointFactory(owner=personas.alice, slug="requester", verbs=[Verb.SUBMIT])
    _, key = mint_key(endpoint)
    listing = guide_lines()[0].replace(GUIDE_URL, live.mcp_url("requester"))
    env = {
        **os.environ,
        "SWITCHBOARD_KEY": key,
        "npm_config_prefer_offline": "true",
        "npm_config_update_notifier": "false",
    }
    [listed] = run_all([listing], env)
    assert listed.returncode == 0, listed.stderr[-2000:]
    tools = {tool["name"]: tool for tool in result_of(listed)["tools"]}
    assert set(tools) == {"get_todo", "submit_todo"}
    assert tools["submit_todo"]["execution"] == {"taskSupport": "optional"}
    assert "Schema portability" not in listed.stderr, listed.stderr[-4000:]
