"""The Board's todo pages' markup built in Python: the Overview's plots as inline SVG and the
table of the numbers they draw.

Built here rather than in a template loop: a day of bars and rows through the template engine
cost more than the page's reads. Every text is escaped (``format_html``, ``escape``); classes
and coordinates are ours (``switchboard/lib/svgplot.py`` computes them).
``tests/todos/test_markup.py`` holds the golden copies.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from switchboard.lib.svgplot import Plot
from todos.overview import Point


def svg(plot: Plot, key: str, title: str, description: str) -> SafeString:
    """``plot`` as an accessible ``<svg role="img">``: named by ``title`` and described by
    ``description`` (ids ``<key>-title``, ``<key>-desc``), each bar and line titled."""
    parts: list[str] = [
        format_html(
            '<svg class="plot" viewBox="0 0 {} {}" role="img"'
            ' aria-labelledby="{}-title {}-desc" data-chart="{}" data-ymax="{}">'
            '<title id="{}-title">{}</title><desc id="{}-desc">{}</desc>',
            plot.width,
            plot.height,
            key,
            key,
            key,
            plot.ymax,
            key,
            title,
            key,
            description,
        )
    ]
    for tick in plot.yticks:
        parts.append(
            f'<line class="grid" x1="{plot.left}" x2="{plot.right}" y1="{tick.at:.1f}"'
            f' y2="{tick.at:.1f}"/><text class="axis" x="{plot.left - 4}" y="{tick.at:.1f}"'
            f' text-anchor="end" dominant-baseline="middle">{escape(tick.label)}</text>'
        )
    for tick in plot.xticks:
        parts.append(
            f'<text class="axis" x="{tick.at:.1f}" y="{plot.height - 6}">'
            f"{escape(tick.label)}</text>"
        )
    for r in plot.rects:
        parts.append(
            f'<rect class="{escape(r.css)}" x="{r.x}" y="{r.y}" width="{r.width}"'
            f' height="{r.height}"><title>{escape(r.title)}</title></rect>'
        )
    for line in plot.lines:
        if line.d:
            parts.append(
                f'<path class="{escape(line.css)}" d="{line.d}"><title>{escape(line.label)}'
                "</title></path>"
            )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 (every text above is escaped)


def plotted_rows(points: Sequence[Point]) -> SafeString:
    """The table rows of the numbers a window's plots draw (built here, like the SVG: a day of
    rows through a template loop cost more than the reads)."""
    return format_html_join(
        "",
        '<tr><td class="nowrap">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>',
        (
            (
                p.at.astimezone(dt.UTC).strftime("%H:%M"),
                p.completed,
                p.failed,
                "—" if p.pending is None else p.pending,
                "—" if p.in_flight is None else p.in_flight,
            )
            for p in points
        ),
    )
