"""Plots for inline SVG, drawn on the server: their geometry (``stacked_bars``, ``lines``).
Pure: numbers and labels in, rectangles, paths and ticks out.

No JavaScript and no library: a plot is rectangles and paths in a fixed ``viewBox`` that CSS
scales to its box. Its markup is the Overview's (``todos/markup.py``, ``svg``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH = 640
HEIGHT = 180
LEFT = 44  # room for the y axis labels
RIGHT = 8
TOP = 8
BOTTOM = 22  # room for the x axis labels


@dataclass(frozen=True, slots=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    css: str
    title: str


@dataclass(frozen=True, slots=True)
class Line:
    css: str
    label: str
    d: str  # the path; one "M" per run of known values


@dataclass(frozen=True, slots=True)
class Tick:
    at: float
    label: str


@dataclass(frozen=True, slots=True)
class Plot:
    width: int
    height: int
    left: int
    right: float
    top: int
    bottom: float
    ymax: int
    rects: list[Rect]
    lines: list[Line]
    yticks: list[Tick]
    xticks: list[Tick]

    @property
    def has_data(self) -> bool:
        return bool(self.rects) or any(line.d for line in self.lines)


def nice_ceiling(value: float) -> int:
    """The smallest 1, 2 or 5 times a power of ten at or above ``value`` (1 for nothing)."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if step * power >= value:
            return int(step * power)
    return int(10 * power)  # not reached


def _tick_label(value: float) -> str:
    """A y tick's value as it sits on the axis: whole numbers as such, the middle of an odd
    maximum with its half (a maximum of 5 reads 0, 2.5, 5: never a rounded 2 at 2.5's height)."""
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.1f}"


def _frame(
    n: int, ymax: int, labels: Sequence[str], label_every: int
) -> tuple[float, list[Tick], list[Tick]]:
    plot_w = WIDTH - LEFT - RIGHT
    step = plot_w / max(n, 1)
    plot_h = HEIGHT - TOP - BOTTOM
    yticks = [Tick(TOP + plot_h * (1 - f), _tick_label(ymax * f)) for f in (0, 0.5, 1)]
    xticks = [
        Tick(LEFT + step * i, labels[i]) for i in range(0, n, max(1, label_every)) if labels[i]
    ]
    return step, yticks, xticks


def stacked_bars(
    labels: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[int]]],
    *,
    label_every: int,
) -> Plot:
    """One bar per label, the series (css class, name, values) stacked bottom up."""
    n = len(labels)
    totals = [sum(values[i] for _, _, values in series) for i in range(n)]
    ymax = nice_ceiling(max(totals, default=0))
    step, yticks, xticks = _frame(n, ymax, labels, label_every)
    plot_h = HEIGHT - TOP - BOTTOM
    rects = []
    for i in range(n):
        base = 0
        for css, name, values in series:
            value = values[i]
            if value <= 0:
                continue
            y0 = TOP + plot_h * (1 - base / ymax)
            y1 = TOP + plot_h * (1 - (base + value) / ymax)
            rects.append(
                Rect(
                    x=round(LEFT + step * i + step * 0.1, 2),
                    y=round(y1, 2),
                    width=round(step * 0.8, 2),
                    height=round(y0 - y1, 2),
                    css=css,
                    title=f"{labels[i] or f'#{i + 1}'}: {value:,} {name}",
                )
            )
            base += value
    return Plot(
        WIDTH, HEIGHT, LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM, ymax, rects, [], yticks, xticks
    )


def lines(
    labels: Sequence[str],
    series: Sequence[tuple[str, str, Sequence[int | None]]],
    *,
    label_every: int,
) -> Plot:
    """One line per series (css class, name, values), through the middle of each label's slot;
    a None value breaks the line."""
    n = len(labels)
    known = [v for _, _, values in series for v in values if v is not None]
    ymax = nice_ceiling(max(known, default=0))
    step, yticks, xticks = _frame(n, ymax, labels, label_every)
    plot_h = HEIGHT - TOP - BOTTOM
    drawn = []
    for css, name, values in series:
        parts: list[str] = []
        run = 0  # points in the current run; a run of one is drawn as a short dash
        last = (0.0, 0.0)
        for i, value in enumerate([*values, None]):
            if value is None:
                if run == 1:
                    x, y = last
                    parts[-1] = f"M{x - 3:.1f} {y:.1f} h6"
                run = 0
                continue
            x = LEFT + step * (i + 0.5)
            y = TOP + plot_h * (1 - value / ymax)
            parts.append(f"{'L' if run else 'M'}{x:.1f} {y:.1f}")
            last = (x, y)
            run += 1
        drawn.append(Line(css=css, label=name, d=" ".join(parts)))
    return Plot(
        WIDTH, HEIGHT, LEFT, WIDTH - RIGHT, TOP, HEIGHT - BOTTOM, ymax, [], drawn, yticks, xticks
    )
