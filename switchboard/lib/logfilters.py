"""Logging filters named in ``settings.LOGGING``.

The A2A SDK logs a client's malformed request (a body that is not a JSON-RPC request, params of
the wrong type) with ``logger.exception``: an ERROR with a traceback for something that is the
caller's mistake, answered with a JSON-RPC error. ``ClientMistakes`` turns those records into one
INFO line that keeps the exception's message; what the SDK logs for its own failures keeps its
traceback.
"""

from __future__ import annotations

import logging

# The SDK's messages for a request it refused as malformed (a2a.server.routes.jsonrpc_dispatcher,
# a2a.compat.v0_3.jsonrpc_adapter; tests/a2a/test_probe.py holds the list to the SDK's words).
CLIENT_MISTAKES = frozenset(
    {
        "Failed to validate base JSON-RPC request",
        "Failed to validate base JSON-RPC request for v0.3",
        "Failed to parse request params",
    }
)


class ClientMistakes(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg in CLIENT_MISTAKES and record.exc_info:
            error = record.exc_info[1]
            record.msg = f"{record.msg}: {type(error).__name__}: {error}"
            record.args = None
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True
