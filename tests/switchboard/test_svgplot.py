"""The inline SVG plots (switchboard/lib/svgplot.py, drawn by todos/markup.py): the scale, bars
in proportion, lines broken where a value is missing, and every text escaped."""

from __future__ import annotations

import re

import pytest

from switchboard.lib import svgplot
from todos.markup import svg


@pytest.mark.parametrize(
    ("value", "ceiling"),
    [(0, 1), (1, 1), (1.5, 2), (3, 5), (7, 10), (10, 10), (11, 20), (420, 500)],
)
def test_the_scale_rounds_up_to_one_two_or_five(value: float, ceiling: int) -> None:
    assert svgplot.nice_ceiling(value) == ceiling


def test_stacked_bars_are_in_proportion_and_skip_zeros() -> None:
    plot = svgplot.stacked_bars(
        ["a", "b", "c"],
        [("ok", "completed", [10, 0, 5]), ("bad", "failed", [10, 0, 0])],
        label_every=1,
    )

    assert plot.ymax == 20
    assert [(r.css, r.title) for r in plot.rects] == [
        ("ok", "a: 10 completed"),
        ("bad", "a: 10 failed"),
        ("ok", "c: 5 completed"),
    ]
    full = plot.bottom - plot.top
    assert plot.rects[0].height + plot.rects[1].height == pytest.approx(full, abs=0.02)
    assert plot.rects[2].height == pytest.approx(full / 4, abs=0.02)
    # Stacked: the failed part sits on the completed one.
    assert plot.rects[1].y + plot.rects[1].height == pytest.approx(plot.rects[0].y, abs=0.02)


def test_a_line_breaks_where_a_value_is_missing_and_dots_a_lone_point() -> None:
    plot = svgplot.lines(
        ["a", "b", "c", "d", "e"], [("p", "pending", [1, 2, None, 4, None])], label_every=1
    )

    (line,) = plot.lines
    assert re.fullmatch(r"M\S+ \S+ L\S+ \S+ M\S+ \S+ h6", line.d), line.d
    assert plot.has_data


def test_no_data_draws_nothing() -> None:
    plot = svgplot.lines(["a"], [("p", "pending", [None])], label_every=1)
    assert not plot.has_data
    assert "<path" not in svg(plot, "k", "t", "d")


def test_every_text_in_the_markup_is_escaped() -> None:
    plot = svgplot.stacked_bars(["<b>"], [("ok", "<i>", [1])], label_every=1)

    markup = str(svg(plot, "k", "<script>", "a & b"))

    assert "<script>" not in markup and "<b>" not in markup and "<i>" not in markup
    assert "&lt;script&gt;" in markup and "a &amp; b" in markup
    assert markup.startswith('<svg class="plot" viewBox="0 0 640 180" role="img"')


@pytest.mark.parametrize(
    ("peak", "labels"),
    [
        (5, ["5", "2.5", "0"]),
        (1, ["1", "0.5", "0"]),
        (10, ["10", "5", "0"]),
        (2000, ["2,000", "1,000", "0"]),
    ],
)
def test_each_y_tick_reads_the_value_at_its_height(peak: int, labels: list[str]) -> None:
    plot = svgplot.lines(["a", "b"], [("p", "pending", [0, peak])], label_every=1)
    assert plot.ymax == peak
    assert [t.label for t in sorted(plot.yticks, key=lambda t: t.at)] == labels
    middle = sorted(plot.yticks, key=lambda t: t.at)[1]
    assert middle.at == pytest.approx((plot.top + plot.bottom) / 2)
