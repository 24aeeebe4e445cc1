"""A routing trace as people read it: per rule, matched or not, each condition's expected and
actual values, missing template fields, errors. Pure: no request, no database.

Below the pages that show a trace: a source's event and rule test
(``todos/intake/source_views.py``) and a todo's trail page (``activity/views.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_OP_WORDS = {"eq": "=", "ne": "≠", "in": "in", "not_in": "not in", "prefix": "starts with"}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _expected(expect: Any) -> str:
    """A condition's operators as a phrase: ``= "check_run"``, ``in ["failure", …]``, ``exists``."""
    if not isinstance(expect, dict):
        return _json(expect)
    parts = []
    for op, operand in expect.items():
        if op == "exists":
            parts.append("exists" if operand else "absent")
        else:
            parts.append(f"{_OP_WORDS.get(op, op)} {_json(operand)}")
    return " and ".join(parts)


@dataclass(frozen=True, slots=True)
class CheckRow:
    where: str
    expected: str
    actual: str
    found: bool
    ok: bool


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One rule's entry of a routing trace (or the note a duplicate's trace holds)."""

    position: Any = None
    rule: str = ""
    rule_id: Any = None
    target: str = ""
    verdict: str = ""
    verdict_class: str = ""
    checks: list[CheckRow] = field(default_factory=list)
    missing_fields: list[str] = field(default_factory=list)
    error: str = ""
    todo_id: str = ""
    duplicate_of: Any = None


def present_trace(trace: Any) -> list[TraceRow]:
    """A stored (or planned) routing trace as rows: per rule matched or not, each condition's
    expected and actual values, missing template fields, errors. Unknown shapes are shown, not
    trusted: every value is a string for the template to escape."""
    rows: list[TraceRow] = []
    for entry in trace if isinstance(trace, list) else []:
        if not isinstance(entry, dict):
            continue
        if "duplicate_of" in entry:
            original = entry["duplicate_of"]
            valid = isinstance(original, int) and not isinstance(original, bool)
            rows.append(TraceRow(verdict="duplicate", duplicate_of=original if valid else None))
            continue
        checks = [
            CheckRow(
                where=f"{'header' if c.get('on') == 'headers' else 'payload'} {c.get('key', '')}",
                expected=_expected(c.get("expect")),
                actual=_json(c.get("actual")) if c.get("found") else "missing",
                found=bool(c.get("found")),
                ok=bool(c.get("ok")),
            )
            for c in entry.get("conditions") or []
            if isinstance(c, dict)
        ]
        error = str(entry.get("error") or "")
        if entry.get("skipped"):
            verdict, css = f"skipped: {entry['skipped']}", "verdict-skipped"
        elif error:
            verdict, css = "error", "verdict-error"
        elif entry.get("matched"):
            verdict, css = "matched", "verdict-matched"
        else:
            verdict, css = "no match", "verdict-missed"
        rows.append(
            TraceRow(
                position=entry.get("position"),
                rule=str(entry.get("rule") or ""),
                rule_id=entry.get("rule_id"),
                target=f"{entry.get('endpoint', '')} / {entry.get('queue', '')}",
                verdict=verdict,
                verdict_class=css,
                checks=checks,
                missing_fields=[str(f) for f in entry.get("missing_fields") or []],
                error=error,
                todo_id=str(entry.get("todo_id") or ""),
            )
        )
    return rows
