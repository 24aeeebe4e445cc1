"""A light MCP client for ``bench/mcp.py``'s ``wire`` variant: one process, one connection.

Not run by hand: ``bench/mcp.py`` starts ``--clients`` copies as subprocesses, so that the
server's throughput is measured with clients that cost little and do not share a process (and
its GIL) with each other or with the bench. It sends exactly the requests the official SDK
client sends in the stateless 2026-07-28 era (one ``tools/call`` POST per call, no initialize,
the same headers and ``_meta``, read from ``mcp`` 2.3's client), with the standard library's
``http.client`` on one kept-alive connection, and checks each answer as the SDK would: HTTP
200, a JSON-RPC result, not a tool error, structured content present. It skips what the SDK
client adds on top (the one ``tools/list`` it caches, validating results against the tools'
output schemas, pydantic models in and out): that is client CPU, not the server's.

The conversation, on stdin/stdout, one JSON line each way: the client warms up (connection,
prepared statements) and prints ``{"ready": true}``; the bench writes a deadline (a
``time.monotonic()`` reading, which is system-wide on Linux); the client runs claim + complete
cycles until then and prints its tally: cycles, whether the queue ran out, its own CPU seconds
inside the window, per-call latencies in ms, or an ``error``. The bearer key comes in the
environment (``MCPWIRE_KEY``), not on the command line, where ``ps`` would show it.

It imports no Django and nothing of the project, so it starts in a few ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
from typing import Any
from urllib.parse import urlsplit

PROTOCOL_VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "bench-mcpwire", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Wire:
    def __init__(self, url: str, key: str) -> None:
        parts = urlsplit(url)
        self.path = parts.path
        self.conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80)
        self.headers = {
            "Authorization": f"Bearer {key}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": PROTOCOL_VERSION,
            "Mcp-Method": "tools/call",
        }
        self.next_id = 0

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """``tools/call tool`` and its structured content; raise on anything else."""
        self.next_id += 1
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments, "_meta": META},
            },
            separators=(",", ":"),
        ).encode()
        self.conn.request("POST", self.path, body, {**self.headers, "Mcp-Name": tool})
        response = self.conn.getresponse()
        raw = response.read()
        if response.status != 200:
            raise RuntimeError(f"{tool}: HTTP {response.status}: {raw[:300]!r}")
        message = json.loads(raw)
        result = message.get("result")
        if not isinstance(result, dict) or result.get("isError"):
            raise RuntimeError(f"{tool}: {str(message)[:300]}")
        structured = result.get("structuredContent")
        if not isinstance(structured, dict):
            raise RuntimeError(f"{tool}: no structured content: {str(message)[:300]}")
        return structured


def run(args: argparse.Namespace) -> dict[str, Any]:
    wire = Wire(args.url, os.environ["MCPWIRE_KEY"])
    claim_args = {"queue": args.queue, "lease_ttl_seconds": args.ttl, "claimant": args.claimant}
    done_args = {"result": json.loads(args.result), "summary": args.summary}
    claim_ms: list[float] = []
    complete_ms: list[float] = []

    def cycle(timed: bool) -> bool:
        t0 = time.perf_counter()
        claimed = wire.call("claim_next", claim_args)
        t1 = time.perf_counter()
        if claimed.get("empty"):
            return False
        wire.call("complete", {"id": claimed["todo"]["id"], **done_args})
        if timed:
            claim_ms.append((t1 - t0) * 1e3)
            complete_ms.append((time.perf_counter() - t1) * 1e3)
        return True

    for _ in range(args.warmup):
        cycle(timed=False)
    print(json.dumps({"ready": True}), flush=True)
    line = sys.stdin.readline()
    if not line.strip():
        return {"cycles": 0, "stopped": True}
    deadline = float(json.loads(line)["deadline"])
    cycles, exhausted = 0, False
    cpu0 = time.process_time()
    while time.monotonic() < deadline:
        if not cycle(timed=True):
            exhausted = True
            break
        cycles += 1
    end = time.monotonic()
    return {
        "cycles": cycles,
        "exhausted": exhausted,
        "end": end,
        "cpu": time.process_time() - cpu0,
        "claim_ms": claim_ms,
        "complete_ms": complete_ms,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--url", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--ttl", type=int, required=True)
    parser.add_argument("--claimant", required=True)
    parser.add_argument("--result", required=True, help="complete's result, as JSON")
    parser.add_argument("--summary", required=True)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    try:
        tally = run(args)
    except Exception as exc:  # reported to the bench, which raises it there
        tally = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(tally), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
