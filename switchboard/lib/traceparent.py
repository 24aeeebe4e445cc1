"""W3C ``traceparent`` parsing (w3c/trace-context, level 3 editor's draft).

Agents hand one over on a claim (a tool argument or MCP ``params._meta.traceparent``) so that the
spans they export later bind to the todo's attempt; the OTLP receiver reads the same values. The
rules are the spec's, including its test suite's edge cases: lowercase hex only, no all-zero
trace or parent id, version ``ff`` invalid, version ``00`` exactly 55 characters, and a higher
version parsed by its first four fields when what follows the flags is a ``-``.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

_FIELDS = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
VERSION_00_LENGTH = 55
SAMPLED = 0x01
RANDOM_TRACE_ID = 0x02


@dataclass(frozen=True, slots=True)
class TraceParent:
    version: str
    trace_id: str
    parent_id: str
    flags: int

    @property
    def sampled(self) -> bool:
        # A bit field: never compare the whole byte (other bits are reserved, ignored on read).
        return bool(self.flags & SAMPLED)

    def __str__(self) -> str:
        """The canonical version-00 form (a higher version is re-emitted as 00, as §3.2 asks)."""
        return f"00-{self.trace_id}-{self.parent_id}-{self.flags:02x}"


def parse(value: object) -> TraceParent | None:
    """Return the parsed ``traceparent``, or None when ``value`` is not a valid one."""
    if not isinstance(value, str) or len(value) < VERSION_00_LENGTH:
        return None
    match = _FIELDS.match(value)
    if match is None:
        return None
    version, trace_id, parent_id, flags = match.groups()
    if version == "ff":
        return None
    rest = value[VERSION_00_LENGTH:]
    if version == "00" and rest:
        return None  # version 00 with trailing data is invalid
    if rest and not rest.startswith("-"):
        return None  # a future version may append fields, always after a '-'
    if trace_id == "0" * 32 or parent_id == "0" * 16:
        return None
    return TraceParent(version, trace_id, parent_id, int(flags, 16))


def mint() -> TraceParent:
    """A fresh traceparent: random trace and parent ids (never all zero), sampled.

    A claim that carried none gets one (``mcp_server.tools``), so an agent that adopts it as the
    parent context of its spans has them bind to its attempt with no attribute to set.
    """
    trace_id = parent_id = "0"
    while int(trace_id, 16) == 0:
        trace_id = secrets.token_hex(16)
    while int(parent_id, 16) == 0:
        parent_id = secrets.token_hex(8)
    return TraceParent("00", trace_id, parent_id, SAMPLED)
