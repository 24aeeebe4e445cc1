"""The MCP App (extension ``io.modelcontextprotocol/ui``): a todo's trail inside the chat.

``submit_todo`` and ``get_todo`` name ``ui://switchboard/todo`` in ``_meta.ui.resourceUri`` for
clients that declared the extension; a host reads that resource (``text/html;profile=mcp-app``)
and renders it in a sandboxed iframe, handing it the tool's result. The view shows the todo's
state, its cost and tokens (``todo.usage``) with its spans counted (``spans``: how many, how
many in error), its question, its attempts with their summaries and artifacts, and its holders'
newest progress notes (``notes``), and follows the todo (a ``get_todo`` through the host every
few seconds until it is finished), marking the notes that arrived since the last look. Its
buttons call the App's own tools (``answer_todo``, ``cancel_todo``, ``retry_todo``:
``_meta.ui.visibility: ["app"]``, so hosts keep them from the model), which are the Board's
lifecycle calls in the endpoint's scope.

Everything the view runs is in the one HTML document served here: the MCP Apps client library
vendored from npm (static/vendor/ext-apps-2.0.4/, unchanged; its closing ``export`` list is
rewritten to a local object when the page is built, since an inline module cannot be imported),
then the view's own script. The document's Content-Security-Policy allows exactly those two
inline blocks (by hash) and nothing else: no network, no other script, style or image; the
resource's ``_meta.ui.csp`` declares no domain, so a host grants none.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import re
from pathlib import Path
from typing import Any

URI = "ui://switchboard/todo"
MIME_TYPE = "text/html;profile=mcp-app"
EXTENSION = "io.modelcontextprotocol/ui"
VENDORED = Path(__file__).resolve().parents[1] / "static/vendor/ext-apps-2.0.4/app-with-deps.js"
# How often the view re-reads an unfinished todo through the host.
FOLLOW_MS = 3000

# What the tools' and the resource's _meta say (the extension's keys).
RESOURCE_META: dict[str, Any] = {
    "ui": {
        "csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": []},
        "prefersBorder": True,
    }
}
MODEL_TOOL_META: dict[str, Any] = {"ui": {"resourceUri": URI}}
APP_TOOL_META: dict[str, Any] = {"ui": {"resourceUri": URI, "visibility": ["app"]}}

_EXPORTS = re.compile(r"export\s*\{([^}]*)\}\s*;?\s*$")

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; padding: 12px; color: #1c1c1c; }
h1 { font-size: 15px; margin: 0 0 6px; }
.state { display: inline-block; padding: 1px 8px; border-radius: 9px; background: #e8e8e8; }
.question { margin: 8px 0; padding: 8px; background: #fff6d6; }
ol { padding-left: 18px; margin: 6px 0; }
li { margin: 2px 0; }
.muted { color: #666; }
button { margin: 6px 6px 0 0; }
textarea { width: 100%; box-sizing: border-box; }
.usage { margin: 4px 0; }
h2 { font-size: 13px; margin: 10px 0 2px; }
.notes { list-style: none; padding-left: 0; }
.note { border-left: 3px solid #d0d0d0; padding-left: 6px; }
.note.new { border-left-color: #3a7bd5; }
.error { color: #a11; }
"""

VIEW = r"""
const { App } = ExtApps;
const FINISHED = new Set(["completed", "canceled", "rejected"]);
const RETRYABLE = new Set(["failed", "canceled", "rejected"]);
const root = document.getElementById("todo");
let current = null;
let following = null;
const seenNotes = new Set();
let firstRender = true;

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}

function todoOf(content) {
  if (!content || typeof content !== "object") return null;
  if (content.todo && typeof content.todo === "object") return content.todo;
  if (typeof content.id === "string" && typeof content.state === "string") return content;
  return null;
}

function finished(todo) {
  return FINISHED.has(todo.state) || (todo.state === "failed" && todo.dead_letter);
}

function count(n) {
  return Number(n || 0).toLocaleString("en-US");
}

// The cost as the Board reads it (attempts/types.py, Usage.cost_label, and
// switchboard/lib/text.py, money): cents from a cent up, below a cent up to four decimals,
// never $0 for tokens no price covers.
function costLabel(usage) {
  const raw = usage.cost_usd;
  if (raw === null || raw === undefined) return usage.unpriced_tokens ? "unpriced" : "$0.00";
  const cost = Number(raw);
  if (!Number.isFinite(cost)) return "$" + raw;
  const sign = cost < 0 ? "-" : "";
  const amount = Math.abs(cost);
  if (amount === 0 || amount >= 0.01) {
    const cents = {minimumFractionDigits: 2, maximumFractionDigits: 2};
    return sign + "$" + amount.toLocaleString("en-US", cents);
  }
  if (amount < 0.00005) return sign + "<$0.0001";
  return sign + "$" + String(Number(amount.toFixed(4)));
}

function usageLine(todo, spans) {
  const line = el("div", "", "usage muted");
  line.id = "usage";
  const usage = todo.usage && typeof todo.usage === "object" ? todo.usage : null;
  const parts = [];
  if (usage) {
    const tokens = usage.tokens || {};
    parts.push(costLabel(usage));
    parts.push(count(tokens.input) + " in / " + count(tokens.output) + " out tokens");
    if (usage.unpriced_tokens && usage.cost_usd) {
      parts.push(count(usage.unpriced_tokens) + " unpriced");
    }
  }
  if (spans && typeof spans === "object") {
    parts.push(count(spans.count) + (spans.count === 1 ? " span" : " spans"));
  }
  if (!parts.length) return null;
  line.textContent = parts.join(" · ");
  if (spans && spans.errors) {
    const word = spans.errors === 1 ? " error" : " errors";
    const errors = el("span", " · " + count(spans.errors) + word, "error");
    errors.id = "span-errors";
    line.append(errors);
  }
  return line;
}

function noteList(notes) {
  const list = el("ol", undefined, "notes");
  list.id = "notes";
  for (const n of notes) {
    const key = n.attempt_seq + "@" + n.at;
    const item = el("li", undefined, "note");
    if (!firstRender && !seenNotes.has(key)) item.classList.add("new");
    seenNotes.add(key);
    const when = typeof n.at === "string" ? n.at.slice(11, 19) + " UTC" : "";
    item.append(el("span", "attempt " + n.attempt_seq + " · " + when + " ", "muted"));
    const text = n.text === null ? "(forgotten)" : n.text + (n.truncated ? "…" : "");
    item.append(el("span", text, "text"));
    list.append(item);
  }
  return list;
}

function render(content) {
  const todo = todoOf(content);
  if (!todo) return;
  current = todo;
  const attempts = Array.isArray(content.attempts) ? content.attempts : [];
  const notes = Array.isArray(content.notes) ? content.notes : [];
  // A re-render (every few seconds while the todo runs) keeps an answer being typed.
  const typing = document.getElementById("answer-text");
  const typed = typing ? typing.value : "";
  const focused = typing && document.activeElement === typing;
  root.replaceChildren();
  root.append(el("h1", todo.title || todo.id));
  const line = el("div");
  line.append(el("span", todo.state, "state"));
  line.append(el("span", "  " + todo.id + " on " + todo.queue, "muted"));
  root.append(line);
  const usage = usageLine(todo, content.spans);
  if (usage) root.append(usage);
  const request = todo.input_request;
  if (todo.state === "input-required" && request && typeof request.question === "string") {
    root.append(el("div", request.question, "question"));
    const box = el("textarea");
    box.id = "answer-text";
    box.rows = 2;
    box.value = typed;
    root.append(box);
    if (focused) box.focus();
    const send = el("button", "Answer");
    send.id = "answer";
    send.onclick = () => act("answer_todo", { id: todo.id, text: box.value });
    root.append(send);
  }
  if (attempts.length) {
    const list = el("ol");
    for (const a of attempts) {
      const item = el("li");
      item.append(el("span", "attempt " + a.seq + ": " + (a.outcome || "running")));
      if (a.summary) item.append(el("div", a.summary, "muted"));
      if (a.artifact) item.append(el("div", a.artifact, "muted"));
      list.append(item);
    }
    root.append(list);
  }
  if (notes.length) {
    root.append(el("h2", "Notes"));
    root.append(noteList(notes));
  }
  firstRender = false;
  if (!finished(todo)) {
    const cancel = el("button", "Cancel");
    cancel.id = "cancel";
    cancel.onclick = () => act("cancel_todo", { id: todo.id });
    root.append(cancel);
  } else if (RETRYABLE.has(todo.state)) {
    const retry = el("button", "Retry");
    retry.id = "retry";
    retry.onclick = () => act("retry_todo", { id: todo.id });
    root.append(retry);
  }
  const status = el("div", "", "muted");
  status.id = "status";
  root.append(status);
  follow();
}

async function refresh() {
  if (!current) return;
  const result = await app.callServerTool({ name: "get_todo", arguments: { id: current.id } });
  if (!result.isError) render(result.structuredContent);
}

function follow() {
  if (following) clearTimeout(following);
  following = current && !finished(current) ? setTimeout(refresh, FOLLOW_MS) : null;
}

async function act(name, args) {
  const status = document.getElementById("status");
  try {
    const result = await app.callServerTool({ name, arguments: args });
    if (result.isError) {
      const text = result.content && result.content[0] ? result.content[0].text : "refused";
      if (status) status.textContent = text;
      return;
    }
    await refresh();
  } catch (error) {
    if (status) status.textContent = String(error);
  }
}

const app = new App({ name: "switchboard-todo", version: "1" }, {});
app.ontoolresult = (result) => render(result.structuredContent);
app.connect().then(() => { root.dataset.connected = "true"; });
""".replace("FOLLOW_MS", str(FOLLOW_MS))


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def library() -> str:
    """The vendored library as an inline module's text: its ``export`` list made a local
    ``ExtApps`` object (the file itself is left as npm shipped it)."""
    text = VENDORED.read_text(encoding="utf-8")
    match = _EXPORTS.search(text)
    if match is None:
        raise RuntimeError(f"{VENDORED}: no closing export list (not the release vendored)")
    pairs = []
    for item in match.group(1).split(","):
        local, _, exported = item.strip().partition(" as ")
        pairs.append(f"{(exported or local).strip()}:{local.strip()}")
    return text[: match.start()] + "const ExtApps={" + ",".join(pairs) + "};"


@functools.cache
def document() -> str:
    """The view's HTML: built once per process (the vendored file does not change under it)."""
    script = library() + "\n" + VIEW
    csp = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(STYLE)};"
        " base-uri 'none'; form-action 'none'"
    )
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(csp, quote=False)}">'
        "<title>Switchboard todo</title>"
        f"<style>{STYLE}</style></head>"
        '<body><div id="todo"><p class="muted">Waiting for the todo…</p></div>'
        f'<script type="module">{script}</script></body></html>'
    )


def declared(capabilities: Any) -> bool:
    """Whether a client's capabilities (the wire's dict) declare MCP Apps with its MIME type."""
    if not isinstance(capabilities, dict):
        return False
    extensions = capabilities.get("extensions")
    if not isinstance(extensions, dict) or EXTENSION not in extensions:
        return False
    settings = extensions[EXTENSION]
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    # A client that lists MIME types must list this one; one that lists none takes the default.
    return mime_types is None or (isinstance(mime_types, list) and MIME_TYPE in mime_types)
