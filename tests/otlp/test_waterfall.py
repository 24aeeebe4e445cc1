"""The waterfall (otlp/waterfall.py): tree order, bar geometry, labels, classes, tokens. No DB."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from otlp.types import AttemptSpans, SpanView
from otlp.waterfall import MIN_BAR_PCT, Waterfall, css_class, duration_label
from otlp.waterfall import build_waterfall as waterfall_of

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TRACE = "ab" * 16


def span(
    sid: str,
    start_ms: float,
    end_ms: float,
    parent: str | None = None,
    category: str = "other",
    status: str = "unset",
    trace: str = TRACE,
) -> SpanView:
    return SpanView(
        trace_id=trace,
        span_id=sid.rjust(16, "0"),
        parent_span_id=parent.rjust(16, "0") if parent else None,
        name=f"span {sid}",
        category=category,
        tool=None,
        status_code=status,
        start_at=T0 + dt.timedelta(milliseconds=start_ms),
        end_at=T0 + dt.timedelta(milliseconds=end_ms),
    )


def build_waterfall(spans: list[SpanView], max_spans: int) -> Waterfall:
    """The waterfall of ``spans`` read whole (no unread spans, no tokens)."""
    return waterfall_of(AttemptSpans(spans, len(spans)), max_spans)


def names(rows: list[Any]) -> list[tuple[str, int]]:
    return [(r.span.name, r.depth) for r in rows]


def test_spans_form_a_tree_by_parent_with_siblings_in_start_order() -> None:
    spans = [
        span("c", 50, 60, parent="a"),
        span("a", 0, 100),
        span("b", 10, 40, parent="a"),
        span("d", 20, 30, parent="b"),
    ]

    waterfall = build_waterfall(spans, 100)

    assert names(waterfall.rows) == [("span a", 0), ("span b", 1), ("span d", 2), ("span c", 1)]


def test_an_orphan_is_a_root_and_a_parent_cycle_still_draws_every_span() -> None:
    orphan = span("o", 5, 6, parent="missing")
    cycle = [span("x", 10, 20, parent="y"), span("y", 12, 14, parent="x")]

    waterfall = build_waterfall([orphan, *cycle], 100)

    assert sorted(names(waterfall.rows)) == [("span o", 0), ("span x", 0), ("span y", 1)]


def test_a_span_id_in_another_trace_is_not_a_parent() -> None:
    parent = span("p", 0, 10)
    stranger = span("s", 1, 2, parent="p", trace="cd" * 16)

    assert names(build_waterfall([parent, stranger], 10).rows) == [("span p", 0), ("span s", 0)]


@pytest.mark.parametrize(
    ("start", "end", "at", "length"),
    [
        (0, 1000, 0.0, 100.0),
        (250, 500, 25.0, 25.0),
        (500, 500, 50.0, MIN_BAR_PCT),  # an instant span is still visible
        (1000, 1000, 100.0 - MIN_BAR_PCT, MIN_BAR_PCT),  # and never runs off the end
    ],
)
def test_bars_are_placed_in_the_attempts_own_span_window(
    start: float, end: float, at: float, length: float
) -> None:
    window = span("w", 0, 1000)
    row = next(
        r
        for r in build_waterfall([window, span("t", start, end)], 10).rows
        if r.span.name == "span t"
    )

    assert (row.at_pct, row.len_pct) == (pytest.approx(at), pytest.approx(length))
    assert row.style == f"--sb-at:{row.at_pct:.2f}%;--sb-len:{row.len_pct:.2f}%"


def test_the_window_starts_at_the_first_span_not_at_the_epoch_or_the_claim() -> None:
    late = [span("a", 60_000, 61_000), span("b", 60_500, 61_000, parent="a")]

    rows = build_waterfall(late, 10).rows

    assert [(r.at_pct, r.len_pct) for r in rows] == [(0.0, 100.0), (50.0, 50.0)]


def test_rows_beyond_the_maximum_are_counted_not_drawn() -> None:
    spans = [span(f"{i:x}", i, i + 1) for i in range(1, 8)]

    waterfall = build_waterfall(spans, 5)

    assert len(waterfall.rows) == 5 and waterfall.more == 2


def test_an_empty_attempt_has_an_empty_waterfall() -> None:
    waterfall = build_waterfall([], 10)

    assert (waterfall.rows, waterfall.more, waterfall.start_at) == ([], 0, None)


@pytest.mark.parametrize(
    ("category", "expected"),
    [
        ("llm", "sb-cat-llm"),
        ("tool", "sb-cat-tool"),
        ("agent", "sb-cat-agent"),
        ("retrieval", "sb-cat-retrieval"),
        ("http", "sb-cat-http"),
        ("db", "sb-cat-db"),
        ("other", "sb-cat-other"),
        ('evil" onload="x', "sb-cat-other"),
        ("", "sb-cat-other"),
    ],
)
def test_the_css_class_comes_from_a_fixed_map(category: str, expected: str) -> None:
    assert css_class(category) == expected


@pytest.mark.parametrize(
    ("seconds", "label"),
    [
        (0, "0 µs"),
        (0.00085, "850 µs"),
        (0.012, "12 ms"),
        (1.25, "1.25 s"),
        (42.4, "42 s"),
        (185, "3 m 05 s"),
        (7260, "2 h 01 m"),
    ],
)
def test_durations_are_labelled_for_humans(seconds: float, label: str) -> None:
    assert duration_label(seconds) == label


def test_spans_not_read_count_as_more_and_the_totals_pass_through() -> None:
    read = [span("a", 0, 1), span("b", 1, 2), span("c", 2, 3)]

    waterfall = waterfall_of(AttemptSpans(read, 10, input_tokens=157, output_tokens=18), 2)

    assert len(waterfall.rows) == 2 and waterfall.more == 8
    assert (waterfall.input_tokens, waterfall.output_tokens, waterfall.total_tokens) == (
        157,
        18,
        175,
    )
    assert waterfall_of(AttemptSpans([], 4, 5, 6), 2).more == 4


def test_an_error_span_is_marked() -> None:
    rows = build_waterfall([span("a", 0, 1, status="error"), span("b", 1, 2)], 10).rows

    assert [r.error for r in rows] == [True, False]


def test_a_chain_of_thousands_of_spans_needs_no_recursion() -> None:
    chain = [span("0", 0, 10_000)] + [
        span(f"{i:x}", i, i + 1, parent=f"{i - 1:x}") for i in range(1, 3000)
    ]

    waterfall = build_waterfall(chain, 5000)

    assert waterfall.rows[-1].depth == 2999
