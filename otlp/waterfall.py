"""An attempt's spans as a waterfall: a tree of rows, each with its bar's place. Pure.

``build_waterfall(attempt, max_spans)`` orders an attempt's spans into a tree by parent (a
span whose parent is not among them is a root, and so is one caught in a parent cycle), depth
first with siblings by start time, and gives each row its bar: ``at_pct`` and ``len_pct`` of
the attempt's own span window (earliest start to latest end), never narrower than
``MIN_BAR_PCT`` so an instant span still shows. Times are relative to that window, not to the
claim, so an agent's skewed clock does not distort the picture. Rows beyond ``max_spans`` are
left out and counted (``more``), and so are the attempt's spans that were not read
(``AttemptSpans.total``). The token totals arrive summed in SQL over every span
(``otlp/sql/spans_for_todo.sql``).

The page draws a bar (``otlp/markup.py``) as ``<span class="sb-bar {css_class}" style="{style}">``:
the class comes from a fixed map (an unknown category is ``sb-cat-other``) and the style is
built from two floats, so span data never names a class or reaches a style attribute.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from otlp.types import AttemptSpans, SpanView

MIN_BAR_PCT = 0.3
CSS_CLASSES = {
    "llm": "sb-cat-llm",
    "tool": "sb-cat-tool",
    "agent": "sb-cat-agent",
    "retrieval": "sb-cat-retrieval",
    "http": "sb-cat-http",
    "db": "sb-cat-db",
    "other": "sb-cat-other",
}
OTHER_CLASS = CSS_CLASSES["other"]


def css_class(category: str) -> str:
    return CSS_CLASSES.get(category, OTHER_CLASS)


def duration_label(seconds: float) -> str:
    """A short human duration: ``850 µs``, ``12 ms``, ``1.25 s``, ``42 s``, ``3 m 05 s``."""
    if seconds < 0.001:
        return f"{max(0, round(seconds * 1_000_000))} µs"
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{round(seconds)} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} m {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} m"


@dataclass(frozen=True, slots=True)
class Row:
    span: SpanView
    depth: int
    at_pct: float
    len_pct: float
    duration: str
    css_class: str
    error: bool

    @property
    def style(self) -> str:
        """The bar's custom properties, from floats only."""
        return f"--sb-at:{self.at_pct:.2f}%;--sb-len:{self.len_pct:.2f}%"


@dataclass(frozen=True, slots=True)
class Waterfall:
    rows: list[Row]
    more: int  # spans beyond max_spans, not drawn
    start_at: dt.datetime | None
    end_at: dt.datetime | None
    duration: str
    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def total(self) -> int:
        """The spans the attempt holds, drawn or not."""
        return len(self.rows) + self.more


def _tree_order(spans: Sequence[SpanView]) -> list[tuple[SpanView, int]]:
    """Depth-first order with depths; siblings by start time. Iterative: a chain of thousands
    of spans must not hit the recursion limit."""
    keys = [(s.trace_id, s.span_id) for s in spans]
    by_key = dict(zip(keys, spans, strict=True))
    children: dict[tuple[str, str], list[SpanView]] = defaultdict(list)
    roots: list[SpanView] = []
    for span, key in zip(spans, keys, strict=True):
        parent_id = span.parent_span_id
        if parent_id:
            parent = (key[0], parent_id)
            if parent != key and parent in by_key:
                children[parent].append(span)
                continue
        roots.append(span)

    def start_key(span: SpanView) -> tuple[dt.datetime, str]:
        return (span.start_at, span.span_id)

    for siblings in children.values():
        siblings.sort(key=start_key)
    ordered: list[tuple[SpanView, int]] = []
    seen: set[tuple[str, str]] = set()
    pending = sorted(roots, key=start_key)
    while True:
        stack = [(root, 0) for root in reversed(pending)]
        while stack:
            span, depth = stack.pop()
            key = (span.trace_id, span.span_id)
            if key in seen:
                continue
            seen.add(key)
            ordered.append((span, depth))
            below = children.get(key)
            if below:
                stack.extend((child, depth + 1) for child in reversed(below))
        if len(seen) == len(by_key):
            return ordered
        # Spans in a parent cycle are reachable from no root: the earliest becomes one.
        left = [s for s, key in zip(spans, keys, strict=True) if key not in seen]
        pending = [min(left, key=start_key)]


def build_waterfall(attempt: AttemptSpans, max_spans: int) -> Waterfall:
    """The waterfall of one attempt's spans (any order), at most ``max_spans`` rows."""
    spans = attempt.spans
    unread = max(0, attempt.total - len(spans))
    if not spans:
        return Waterfall(
            [], unread, None, None, duration_label(0), attempt.input_tokens, attempt.output_tokens
        )
    start = min(s.start_at for s in spans)
    end = max(s.end_at for s in spans)
    window = (end - start).total_seconds()
    ordered = _tree_order(spans)
    rows = []
    for span, depth in ordered[: max(0, max_spans)]:
        seconds = (span.end_at - span.start_at).total_seconds()
        if window > 0:
            at = (span.start_at - start).total_seconds() / window * 100
            length = seconds / window * 100
        else:
            at, length = 0.0, 100.0
        length = max(MIN_BAR_PCT, length)
        at = min(max(0.0, at), 100.0 - length)
        rows.append(
            Row(
                span,
                depth,
                round(at, 2),
                round(length, 2),
                duration_label(seconds),
                CSS_CLASSES.get(span.category, OTHER_CLASS),
                span.status_code == "error",
            )
        )
    return Waterfall(
        rows=rows,
        more=len(ordered) - len(rows) + unread,
        start_at=start,
        end_at=end,
        duration=duration_label(window),
        input_tokens=attempt.input_tokens,
        output_tokens=attempt.output_tokens,
    )
