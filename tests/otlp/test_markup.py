"""The waterfall's Python-built markup (otlp/markup.py) against its golden copy.

No template draws a waterfall (the trail page's first paint and its live pushes both call
``waterfall_html``), so there is no twin to render beside it: the golden copy in tests/golden/
fails when the HTML changes, until it is rewritten on purpose. Pure: no database.
"""

from __future__ import annotations

import datetime as dt

from otlp.markup import rows_html, waterfall_html
from otlp.types import AttemptSpans, SpanView
from otlp.waterfall import Waterfall, build_waterfall
from tests.golden import assert_golden

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
HOSTILE = '<img src=x onerror=alert(1)> & "it\'s"'
TRACE = "ab" * 16


def span(n: int, name: str, start: float, seconds: float, **fields: object) -> SpanView:
    values: dict = {
        "trace_id": TRACE,
        "span_id": f"{n:016x}",
        "parent_span_id": None,
        "name": name,
        "category": "llm",
        "tool": None,
        "status_code": "ok",
        "start_at": T0 + dt.timedelta(seconds=start),
        "end_at": T0 + dt.timedelta(seconds=start + seconds),
    }
    return SpanView(**(values | fields))


def waterfalls() -> dict[str, tuple[Waterfall | None, int]]:
    """Each case: the waterfall (None: no spans read) and the spans dropped over the cap, or
    (the cases named "removed") removed by span retention."""
    tree = AttemptSpans(
        spans=[
            span(1, "invoke_agent fixer", 0, 90, category="agent"),
            span(2, "chat claude", 1, 30, parent_span_id=f"{1:016x}"),
            span(3, HOSTILE, 31, 0.0002, parent_span_id=f"{2:016x}", tool=HOSTILE, category="x"),
            span(4, "retrieve docs", 40, 0.05, category="retrieval", status_code="error"),
            span(5, "hidden by the cap", 50, 1),
        ],
        total=7,
        input_tokens=1200,
        output_tokens=300,
    )
    instant = AttemptSpans(spans=[span(6, "instant", 5, 0, category="db")], total=1)
    return {
        "no spans, none dropped": (None, 0),
        "no spans read, some dropped": (None, 3),
        "a tree, capped, tokens, dropped": (build_waterfall(tree, 4), 2),
        "one instant span": (build_waterfall(instant, 10), 0),
        "one instant span, one removed": (build_waterfall(instant, 10), 1),
        "no spans left, all removed": (None, 5),
    }


def test_the_waterfall_draws_its_golden_copy() -> None:
    parts = []
    for name, (waterfall, dropped) in waterfalls().items():
        for oob in (False, True):
            removed = "removed" in name
            html = waterfall_html(
                waterfall,
                anchor="waterfall-td_x-1",
                spans_dropped=0 if removed else dropped,
                oob=oob,
                aged_out=dropped if removed else 0,
                retention_days=30,
            )
            parts.append(f"<!-- {name}{', out of band' if oob else ''} -->\n{html}\n")
    text = "".join(parts)

    assert "<img" not in text and HOSTILE not in text
    assert_golden("otlp_waterfall.html", text)


def test_the_rows_are_the_waterfalls_table_body() -> None:
    waterfall, _ = waterfalls()["a tree, capped, tokens, dropped"]
    assert waterfall is not None

    rows = rows_html(waterfall)

    assert rows.count("<tr") == 4
    assert f"<tbody>\n{rows}\n    </tbody>" in waterfall_html(
        waterfall, anchor="a", spans_dropped=0, oob=False
    )
