"""The MCP App (``ui://switchboard/todo``) in Chromium, inside a test host.

The host is a page of this test: it renders the resource Switchboard serves in a sandboxed
iframe, as MCP hosts do, and speaks the host side of the extension over postMessage
(``ui/initialize``, ``ui/notifications/tool-result``, and ``tools/call`` proxied to the MCP
server over real HTTP with the requester's key, through a function Playwright exposes). The App
is the vendored ext-apps library with Switchboard's view; its Cancel button cancels the todo
through ``cancel_todo``, and the holder hears it. It shows the todo's cost, tokens and spans
(sent over OTLP/HTTP under the claim's traceparent) and the holder's notes as they arrive.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from otlp import prices
from switchboard.credentials import mint_key
from switchboard.lib.errors import TodoEnded
from switchboard.models import DRAIN_VERBS, Verb
from tests.base import Personas
from tests.factories import EndpointFactory
from tests.live import LiveServer
from tests.mcp.wire import APP_URI, APPS_CLIENT, MIME, rpc
from tests.otlp.helpers import SpanSpec, post, request
from tests.otlp.test_usage import FIXTURES
from tests.reach import OWNER
from todos import lifecycle
from todos.models import Todo

pytestmark = [pytest.mark.django_db(transaction=True)]

HOST = """<!doctype html><html><body>
<iframe id="app" sandbox="allow-scripts" style="width:600px;height:400px"></iframe>
<script>
window.hostLog = [];
window.startApp = (html, toolResult) => {
  const frame = document.getElementById("app");
  const post = (message) => frame.contentWindow.postMessage(message, "*");
  window.addEventListener("message", async (event) => {
    if (event.source !== frame.contentWindow) return;
    const message = event.data;
    window.hostLog.push(message.method || "response");
    if (message.method === "ui/initialize") {
      post({ jsonrpc: "2.0", id: message.id, result: {
        protocolVersion: message.params.protocolVersion,
        hostInfo: { name: "switchboard-test-host", version: "1" },
        hostCapabilities: { serverTools: {} },
        hostContext: {},
      }});
    } else if (message.method === "ui/notifications/initialized") {
      post({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: toolResult });
    } else if (message.method === "tools/call") {
      const result = await window.proxyToolCall(message.params);
      post({ jsonrpc: "2.0", id: message.id, result });
    } else if (message.id !== undefined && message.method) {
      post({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: "not here" } });
    }
  });
  frame.srcdoc = html;
};
</script></body></html>"""


def app_rpc(url: str, key: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request from a client that declares MCP Apps (the host, proxying the App's calls too):
    its result."""
    return rpc(url, key, method, params, capabilities=APPS_CLIENT)


def opening(url: str, key: str, todo_id: str) -> tuple[str, dict[str, Any]]:
    """What a host opens the App with: its HTML, and get_todo's result for the todo."""
    [content] = app_rpc(url, key, "resources/read", {"uri": APP_URI})["contents"]
    shown = app_rpc(url, key, "tools/call", {"name": "get_todo", "arguments": {"id": todo_id}})
    return str(content["text"]), shown


def test_the_app_is_declared_only_to_clients_of_the_extension_and_served_as_mcp_app(
    live_daphne: LiveServer, personas: Personas
) -> None:
    endpoint = EndpointFactory(owner=personas.alice, slug="viewer", verbs=[Verb.SUBMIT])
    _, key = mint_key(endpoint)
    url = live_daphne.mcp_url("viewer")

    plain = {t["name"]: t for t in rpc(url, key, "tools/list", {})["tools"]}
    assert set(plain) == {"get_todo", "submit_todo"}
    assert all("_meta" not in t for t in plain.values())

    tools = {t["name"]: t for t in app_rpc(url, key, "tools/list", {})["tools"]}
    assert tools["submit_todo"]["_meta"]["ui"] == {"resourceUri": APP_URI}
    assert tools["get_todo"]["_meta"]["ui"] == {"resourceUri": APP_URI}
    for name in ("answer_todo", "cancel_todo", "retry_todo"):
        assert tools[name]["_meta"]["ui"]["visibility"] == ["app"]

    [content] = app_rpc(url, key, "resources/read", {"uri": APP_URI})["contents"]
    assert content["mimeType"] == MIME
    csp = content["_meta"]["ui"]["csp"]
    assert csp["connectDomains"] == [] and csp["resourceDomains"] == []
    html = content["text"]
    assert "default-src 'none'" in html and "https://" not in html.split("<script")[0]
    assert "<script src" not in html  # everything inline, nothing fetched


def test_the_app_renders_in_a_host_and_its_cancel_button_cancels_the_todo(
    browser: Browser, live_daphne: LiveServer, personas: Personas
) -> None:
    endpoint = EndpointFactory(owner=personas.alice, slug="chat", verbs=[*DRAIN_VERBS, Verb.SUBMIT])
    _, key = mint_key(endpoint)
    url = live_daphne.mcp_url("chat")
    submitted = app_rpc(
        url,
        key,
        "tools/call",
        {"name": "submit_todo", "arguments": {"queue": "q", "title": "Summarize the thread"}},
    )
    todo_id = submitted["structuredContent"]["todo"]["id"]
    lifecycle.claim(endpoint.id, todo_id, owner=OWNER)
    html, shown = opening(url, key, todo_id)

    calls: list[str] = []

    def proxy_tool_call(params: dict[str, Any]) -> dict[str, Any]:
        calls.append(params["name"])
        return app_rpc(url, key, "tools/call", params)

    context = browser.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.expose_function("proxyToolCall", proxy_tool_call)
        page.set_content(HOST)
        page.evaluate("([html, result]) => window.startApp(html, result)", [html, shown])
        app = page.frame_locator("#app")
        expect(app.locator("h1")).to_have_text("Summarize the thread")
        expect(app.locator(".state")).to_have_text("claimed")
        app.locator("#cancel").click()
        expect(app.locator(".state")).to_have_text("canceled")
        assert "cancel_todo" in calls and calls[-1] == "get_todo"
        log = page.evaluate("window.hostLog")
        assert log[:2] == ["ui/initialize", "ui/notifications/initialized"], log
        # The view's CSP allowed everything it runs: no violation was reported.
        assert not [e for e in errors if "Content Security Policy" in e], errors
    finally:
        context.close()

    assert Todo.objects.get(id=todo_id).state == "canceled"
    with pytest.raises(TodoEnded):
        lifecycle.heartbeat(endpoint.id, todo_id, owner=OWNER)
    assert json.dumps(shown)  # the tool result the host handed the App was plain JSON


def test_the_app_shows_cost_spans_and_notes_as_they_arrive(
    browser: Browser, live_daphne: LiveServer, personas: Personas
) -> None:
    prices.load(prices.parse((FIXTURES / "prices.csv").read_text()), "tests")
    endpoint = EndpointFactory(
        owner=personas.alice, slug="notes", verbs=[*DRAIN_VERBS, Verb.REQUEST_INPUT, Verb.SUBMIT]
    )
    _, key = mint_key(endpoint)
    url = live_daphne.mcp_url("notes")

    def call(name: str, **arguments: Any) -> dict[str, Any]:
        result = app_rpc(url, key, "tools/call", {"name": name, "arguments": arguments})
        assert not result.get("isError"), result
        return dict(result["structuredContent"])

    todo_id = call("submit_todo", queue="q", title="Summarize the thread")["todo"]["id"]
    claimed = call("claim", id=todo_id)
    _, trace_hex, parent_hex, _ = claimed["traceparent"].split("-")
    trace, parent = bytes.fromhex(trace_hex), bytes.fromhex(parent_hex)
    model_call = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 340,
    }
    spans = [
        SpanSpec(trace, parent=parent, name="chat gpt-4o", attributes=model_call),
        SpanSpec(trace, parent=parent, name="execute_tool search", status=2),
    ]
    sent = post(live_daphne, key, request(spans).SerializeToString(), slug="notes")
    assert sent.status_code == 200, sent.content
    call("heartbeat", id=todo_id, note="read the thread")
    html, shown = opening(url, key, todo_id)

    context = browser.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        calls: list[str] = []

        def proxy_tool_call(params: dict[str, Any]) -> dict[str, Any]:
            calls.append(params["name"])
            return app_rpc(url, key, "tools/call", params)

        page.expose_function("proxyToolCall", proxy_tool_call)
        page.set_content(HOST)
        page.evaluate("([html, result]) => window.startApp(html, result)", [html, shown])
        app = page.frame_locator("#app")
        usage = app.locator("#usage")
        expect(usage).to_contain_text("1,200 in / 340 out tokens")
        expect(usage).to_contain_text("2 spans")
        expect(app.locator("#span-errors")).to_have_text(" · 1 error")
        expect(usage).to_contain_text("$0.")  # priced: gpt-4o in the test price table
        expect(app.locator("#notes .note")).to_have_count(1)
        expect(app.locator("#notes .note .text")).to_have_text("read the thread")

        # A note sent while the App is open shows at its next look, marked new, on top.
        call("heartbeat", id=todo_id, note="drafting the summary")
        expect(app.locator("#notes .note")).to_have_count(2, timeout=10_000)
        expect(app.locator("#notes .note.new .text")).to_have_text("drafting the summary")
        expect(app.locator("#notes .note .text").first).to_have_text("drafting the summary")

        # An answer being typed survives the view's next look at the todo.
        call("request_input", id=todo_id, question="Which thread?")
        box = app.locator("#answer-text")
        expect(box).to_be_visible(timeout=10_000)
        box.fill("the release thread")
        looked = calls.count("get_todo")
        (view,) = page.main_frame.child_frames
        view.evaluate("document.getElementById('usage').dataset.seen = 'yes'")
        # The view re-renders whole at its next look: the marked line is a new one then.
        view.wait_for_function("() => !document.getElementById('usage').dataset.seen")
        assert calls.count("get_todo") > looked
        expect(box).to_have_value("the release thread")
        app.locator("#answer").click()
        expect(app.locator(".state")).to_have_text("claimed", timeout=10_000)
        assert not [e for e in errors if "Content Security Policy" in e], errors
    finally:
        context.close()
