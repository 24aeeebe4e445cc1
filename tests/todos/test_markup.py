"""The Overview's Python-built markup (todos/markup.py) against its golden copy.

No template draws the plots or the plotted numbers' rows (the Overview's template prints what
these build), so there is no twin to render beside them: the golden copy in tests/golden/ fails
when the HTML changes, until it is rewritten on purpose. Pure: no database.
"""

from __future__ import annotations

import datetime as dt

from switchboard.lib import svgplot
from tests.golden import assert_golden
from todos.markup import plotted_rows, svg
from todos.overview import Point

T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def points() -> list[Point]:
    return [
        Point(T0 + dt.timedelta(minutes=i), 1, completed, failed, pending, in_flight)
        for i, (completed, failed, pending, in_flight) in enumerate(
            [(3, 1, 12, 2), (0, 0, None, None), (7, 2, 9, 3), (1, 0, 0, 1)]
        )
    ]


def test_the_overview_markup_draws_its_golden_copy() -> None:
    data = points()
    labels = [p.at.strftime("%H:%M") for p in data]
    bars = svgplot.stacked_bars(
        labels,
        [
            ("bar-completed", "completed", [p.completed for p in data]),
            ("bar-failed", "<b>", [1] * 4),
        ],
        label_every=2,
    )
    lines = svgplot.lines(
        labels,
        [
            ("line-pending", "pending", [p.pending for p in data]),
            ("line-in-flight", "in flight", [p.in_flight for p in data]),
        ],
        label_every=2,
    )
    text = (
        f"<!-- stacked bars -->\n{svg(bars, 'throughput-hour', 'Throughput <now>', 'a & b')}\n"
        f"<!-- lines, with a gap -->\n{svg(lines, 'depth-hour', 'Depth', 'pending "q"')}\n"
        f"<!-- the plotted numbers -->\n{plotted_rows(data)}\n"
    )

    assert "<b>" not in text and "<now>" not in text
    assert_golden("todos_overview.html", text)
