"""The official MCP conformance suite's authorization-server scenarios against a live server.

The suite (``@modelcontextprotocol/conformance``, the version tests/conformance.py pins and
runs through npx) has no authorization scenarios for MCP servers: its ``auth/*`` scenarios test
clients. It has two for authorization servers, run here: ``authorization-server-metadata-endpoint``
(RFC 8414 at the well-known URI, the issuer, ``client_id_metadata_document_supported``) and
``authorization-code-grant`` (the code grant with PKCE S256 and ``resource``: the redirect,
``state`` and ``iss``, a JSON ``no-store`` token response). The second prints an authorization
URL for a person and waits for its callback on 127.0.0.1; this test is that person, on the
Board's consent page over HTTP. Like tests/mcp/test_inspector.py it fails, never skips, when npx
is missing.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from switchboard.lib.oauth_scopes import READ, WORK
from tests.conformance import conformance_argv
from tests.factories import EndpointFactory, HumanFactory
from tests.live import LiveServer, _free_port
from tests.oauth.conftest import board_login
from tests.oauth.flow import form_fields

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT_SECONDS = 600


def _deliver(callback: str) -> None:
    """Hand the redirect to the suite's callback server, which starts listening just after it
    prints the URL."""
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx2.get(callback, timeout=30)
            return
        except httpx2.ConnectError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_conformance_suites_authorization_server_scenarios_pass(
    oauth_live: LiveServer, tmp_path: Path
) -> None:
    human = HumanFactory(username="oa-conf")
    EndpointFactory(owner=human, slug="oa-conf")
    session = board_login(oauth_live, "oa-conf")
    port = _free_port()
    registered = httpx2.post(
        oauth_live.url("/oauth/register/"),
        json={
            "client_name": "MCP conformance suite",
            "redirect_uris": [f"http://127.0.0.1:{port}/callback"],
            "token_endpoint_auth_method": "none",
        },
        timeout=30,
    ).json()
    resource = oauth_live.url("/mcp/oa-conf/oauth")
    out = tmp_path / "results"
    process = subprocess.Popen(
        conformance_argv(
            "authorization",
            "--url",
            oauth_live.base,
            "--client-id",
            registered["client_id"],
            "--resource",
            resource,
            "--port",
            str(port),
            "-o",
            str(out),
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    printed: list[str] = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            printed.append(line)
            if line.startswith(oauth_live.url("/oauth/authorize/")):
                page = session.get(line.strip())
                assert page.status_code == 200, page.text[:500]
                answer = session.post(
                    line.strip(),
                    data={
                        **form_fields(page.text),
                        "endpoint": "oa-conf",
                        "scopes": [READ, WORK],
                        "allow": "true",
                    },
                )
                assert answer.status_code == 302, answer.text[:500]
                _deliver(answer.headers["location"])
        process.wait(timeout=TIMEOUT_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    log = "".join(printed)
    checks = [
        check for path in sorted(out.rglob("checks.json")) for check in json.loads(path.read_text())
    ]
    names = {check["id"] for check in checks}
    assert {"authorization-server-metadata", "authorization-code-grant"} <= names, log[-3000:]
    failed = [c for c in checks if c["status"] not in ("SUCCESS",)]
    assert not failed, (failed, log[-3000:])
