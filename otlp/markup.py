"""The waterfall's markup: an attempt's spans as the trail page draws them, built in Python.

One render path for the trail page's first paint and its live updates (``activity/markup.py``
calls ``waterfall_html`` for both). Built as strings rather than in a template: a page may draw
thousands of bars, and a template (or ``format_html``) costs tens of microseconds a row. Span
text only ever lands escaped; classes and styles are ours (``otlp/waterfall.py``).
``tests/otlp/test_markup.py`` holds the golden copies.
"""

from __future__ import annotations

from html import escape

from django.utils.safestring import SafeString, mark_safe

from attempts.types import Usage
from otlp.waterfall import Waterfall


def rows_html(waterfall: Waterfall) -> SafeString:
    """The waterfall's table rows, escaped: the one render path for the page and its refreshes.

    Built as one string rather than in a template loop: a page may draw thousands of bars, and
    a template (or ``format_html``) costs tens of microseconds a row. Span text (the name, the
    tool) only ever lands escaped, as an element's content; the class comes from
    ``CSS_CLASSES``, the style from two floats (as ``Row.style``), the depth is an int and the
    duration ``duration_label``'s digits and units. Span names repeat (a model's calls, a
    tool's): each distinct one is escaped once.
    """
    parts = []
    names: dict[str, str] = {}
    for row in waterfall.rows:
        span = row.span
        name = names.get(span.name)
        if name is None:
            name = names[span.name] = escape(span.name)
        tool = span.tool
        parts.append(
            f"<tr{' class="sb-error"' if row.error else ''}>"
            f'<td class="sb-name" style="--sb-depth:{int(row.depth)}">'
            f'<span class="mono small">{name}</span>'
            f"{f' <span class="muted small">{escape(tool)}</span>' if tool else ''}</td>"
            f'<td class="hide-narrow small">{row.duration}</td>'
            f'<td class="sb-track"><span class="sb-bar {row.css_class}"'
            f' style="--sb-at:{row.at_pct:.2f}%;--sb-len:{row.len_pct:.2f}%"'
            ' aria-hidden="true"></span></td></tr>'
        )
    return mark_safe("\n".join(parts))  # noqa: S308 (every piece above is escaped or ours)


_WATERFALL_TABLE = (
    '\n  <table class="sb-waterfall">\n    <thead><tr><th>Span</th><th class="hide-narrow">'
    'Duration</th><th class="sb-track-head">Time</th></tr></thead>\n    <tbody>\n'
)


def waterfall_html(
    waterfall: Waterfall | None,
    *,
    anchor: str,
    spans_dropped: int,
    oob: bool,
    usage: Usage | None = None,
    aged_out: int = 0,
    retention_days: int = 0,
) -> SafeString:
    """An attempt's waterfall whole, escaped: its head (how many spans, dropped over the cap,
    removed by span retention, over how long, the tokens) and its rows, in an element with id
    ``anchor``; with ``oob`` for a live update to swap it in place. Empty when the attempt has
    no spans and none was dropped or removed. The one render path for the trail page's first
    paint and its live updates. ``usage`` is the attempt's (kept on its row by the ingest): its
    cost and tokens replace the head's token sums when it has any. ``aged_out`` spans were
    stored and are gone, their days' partitions dropped for being older than
    ``retention_days`` (docs/decisions/0040-span-partitions.md)."""
    rows = waterfall.rows if waterfall is not None else []
    body = ""
    if rows or spans_dropped or aged_out:
        more = dropped = gone = duration = tokens = table = ""
        if waterfall is not None:
            more = f" drawn, {waterfall.more} more" if waterfall.more else ""
            duration = f'<span class="muted">over {escape(waterfall.duration)}</span>'
            if usage is not None and usage.any:
                tokens = f'<span class="sb-usage">{escape(usage.label())}</span>'
            elif waterfall.total_tokens:
                tokens = (
                    f'<span class="muted">tokens: {int(waterfall.input_tokens)} in,'
                    f" {int(waterfall.output_tokens)} out</span>"
                )
        if spans_dropped:
            dropped = f'<span class="badge failed">{int(spans_dropped)} dropped over the cap</span>'
        if aged_out:
            n, days = int(aged_out), int(retention_days)
            gone = (
                f'<span class="muted">{n} span{"" if n == 1 else "s"} older than {days}'
                f" day{'' if days == 1 else 's'} {'was' if n == 1 else 'were'} removed by"
                " retention</span>\n    "
            )
        if rows and waterfall is not None:
            table = f"{_WATERFALL_TABLE}{rows_html(waterfall)}\n    </tbody>\n  </table>\n  "
        body = (
            '\n  <div class="waterfall-head small">\n    <strong>Spans</strong>\n'
            f"    <span>{len(rows)}{more}</span>\n    {dropped}\n    {gone}{duration}\n"
            f"    {tokens}\n"
            f"  </div>\n  {table}"
        )
    swap = ' hx-swap-oob="true"' if oob else ""
    return mark_safe(  # noqa: S308 (every piece above is escaped or ours)
        f'<div class="waterfall" id="{escape(anchor)}"{swap}>{body}\n</div>'
    )
