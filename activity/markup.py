"""The trail page's markup, built in Python: its claims, ends and activity entries, each
attempt group (head, entries, heartbeat line, waterfall, end), for the first paint
(``activity/views.py``) and the live pushes (``activity/live.py``) alike, so a push draws an
entry exactly as the page did.

Built here rather than in the template: a trail draws hundreds of entries and thousands of bars,
and a template partial spends a hundred lookups on each. The template (``todos/todo_detail.html``)
draws only the delivery and the creation, once a page, in its ``trail_entry`` partial, which
frames them as ``framed`` frames the rest. Stored text only ever lands escaped, as element
content or a quoted ``href``; classes are ours. ``tests/activity/test_markup.py`` renders each
builder beside its template twin and holds golden copies of the rest.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from html import escape

from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe

from activity.trail import CLAIM, END, ActivityRow, AttemptGroup, TimelineEntry, Trail
from attempts.models import Outcome
from otlp.markup import waterfall_html
from todos.present import AttemptRow, attempt_row


def activity_html(row: ActivityRow) -> SafeString:
    """An activity row's part of its timeline entry, escaped: who, what, the state change, the
    listeners, then the note or the reason. Stored text only ever lands escaped, as element
    content; a class is named after a known state only (``transition``) or is ours."""
    parts = [
        f'<div><span class="actor{" human" if row.actor_kind == "human" else ""}">'
        f"{escape(row.actor)}</span> {escape(row.words)}"
    ]
    transition = row.transition
    if transition:
        before, after = transition
        parts.append(
            f': <span class="badge state-{before}">{before}</span>'
            f' → <span class="badge state-{after}">{after}</span>'
        )
    subscribers = row.subscribers
    if subscribers is not None:
        parts.append(f' <span class="muted small">({subscribers} listening)</span>')
    parts.append("</div>")
    text, css = (row.message, "note") if row.kind == "note" else (row.reason, "reason")
    if text:
        badge = ' <span class="badge">truncated</span>' if row.truncated else ""
        parts.append(f'\n    <p class="{css}">{escape(text)}{badge}</p>')
    # Every piece above is escaped or ours. SafeString as mark_safe makes it, without
    # mark_safe's check for lazy strings, which costs more than the row on a long trail.
    return SafeString("".join(parts))


def framed(entry: TimelineEntry, what: str, tz: dt.tzinfo) -> SafeString:
    """The entry's markup around ``what``, its content (escaped by the caller): its time
    in ``tz`` (the current time zone, looked up once a page: ``localtime`` looks it up on
    every call) and its anchor, exactly as the template's ``trail_entry`` partial frames
    the delivery and the creation. ``kind`` is a column under a CHECK list or ours;
    escaped all the same."""
    stamp = entry.at.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")
    # The kind is escaped, the rest is ours or the caller's (SafeString: see activity_html).
    return SafeString(
        f'<div class="trail-entry trail-{escape(entry.kind)}" id="{escape(entry.anchor)}">\n'
        f'  <time class="when mono small" datetime="{entry.iso}">{stamp}</time>\n'
        f'  <div class="what">\n  {what}\n  </div>\n</div>'
    )


def _claim_what(row: AttemptRow) -> str:
    view = row.view
    claimant = f' · <span class="mono">{escape(view.claimant)}</span>' if view.claimant else ""
    return f"\n    <div><strong>Claimed</strong> by {escape(row.claimer)}{claimant}</div>\n  "


def _end_what(row: AttemptRow) -> str:
    view = row.view
    disposition = (
        f' <span class="badge">→ {escape(view.disposition)}</span>' if view.disposition else ""
    )
    summary = ""
    if view.summary:
        badge = ' <span class="badge">truncated</span>' if view.summary_truncated else ""
        summary = f'<p class="summary">{escape(view.summary)}{badge}</p>'
    artifact = ""
    if view.artifact:
        shown = escape(view.artifact)
        link = (
            f'<a href="{shown}" rel="noopener noreferrer nofollow" target="_blank">{shown}</a>'
            if row.artifact_link
            else f'<span class="mono">{shown}</span>'
        )
        artifact = f'<div class="small">artifact:\n      {link}\n    </div>'
    return (
        f'\n    <div><span class="badge {escape(row.outcome_class)}">'
        f"{escape(row.outcome_word)}</span>{disposition}"
        f' <span class="muted small">after {escape(row.duration)}</span></div>'
        f"\n    {summary}\n    {artifact}\n  "
    )


def entry_html(entry: TimelineEntry, row: AttemptRow | None, tz: dt.tzinfo) -> SafeString:
    """A claim, an end or an activity row of the timeline, escaped, with ``row`` the claim's
    or the end's attempt and its time in ``tz``: the one render path for the trail page's first
    paint and its live updates. The template draws only the delivery and the creation (once a
    page, with links and the routing trace); a trail draws hundreds of these, and a template
    partial spends a hundred lookups on each. Stored text lands escaped, as element content or
    a quoted ``href``; classes are ours (``outcome_badge``).
    """
    if entry.activity is not None:
        what = f"\n    {activity_html(entry.activity)}\n  "
    elif entry.kind == CLAIM and row is not None:
        what = _claim_what(row)
    elif entry.kind == END and row is not None:
        what = _end_what(row)
    else:  # a claim or an end has its attempt's row (trail_rows reads every attempt it groups)
        raise ValueError(f"no markup for a {entry.kind} entry without its attempt")
    return framed(entry, what, tz)


_OOB = ' hx-swap-oob="true"'


def attempt_head_html(
    group: AttemptGroup, row: AttemptRow | None, max_attempts: int, *, oob: bool
) -> SafeString:
    """An attempt group's head, escaped: its number, and for an attempt still open its badge
    and how long it has run; with ``oob`` for a live update to swap it in place."""
    seq = group.seq
    if row is not None:
        view = row.view
        badge = (
            ""
            if view.ended_at
            else f'<span class="badge {escape(row.outcome_class)}">{escape(row.outcome_word)}'
            f'</span> <span class="muted small">{escape(row.duration)}</span>'
        )
        what = f"<span>attempt {int(view.attempt)} of {int(max_attempts)}</span>\n        {badge}"
        what += "\n        "
    elif group.pruned:
        what = (
            f'<span class="muted">attempt {seq} (pruned): its record is gone, its notes'
            " remain</span>\n        "
        )
    else:
        what = f'<span class="muted">attempt {seq} (older than this page reads)</span>'
    return mark_safe(  # noqa: S308 (every piece above is escaped or ours)
        f'<div class="head" id="attempt-{seq}-head"{_OOB if oob else ""}>\n'
        f"        <strong>#{seq}</strong>\n        {what}\n      </div>"
    )


def attempt_heartbeat_html(group: AttemptGroup, tz: dt.tzinfo, *, oob: bool) -> SafeString:
    """An attempt group's heartbeat line (its last heartbeat in ``tz``, the notes refused over
    the cap); with ``oob`` for a live update to swap it in place."""
    at = group.last_heartbeat_at
    said = (
        f"last heartbeat {at.astimezone(tz).strftime('%Y-%m-%d %H:%M:%S %Z')}"
        " (recorded at most once a minute)"
        if at is not None
        else "no heartbeat recorded"
    )
    dropped = 0 if group.attempt is None else int(group.attempt.notes_dropped)
    if dropped:
        said += f"; {dropped} more note{'' if dropped == 1 else 's'} refused over the cap"
    return mark_safe(  # noqa: S308 (ours: numbers, a time, fixed words)
        f'<div class="trail-entry trail-heartbeat" id="attempt-{group.seq}-heartbeat"'
        f'{_OOB if oob else ""}><span class="when"></span>'
        f'<div class="what muted small">{said}</div></div>'
    )


def attempt_waterfall_html(
    trail: Trail, group: AttemptGroup, row: AttemptRow, *, oob: bool
) -> SafeString:
    """An attempt group's waterfall (``otlp.markup.waterfall_html``), by its page id: its spans
    in ``trail``, and how many of the spans stored for it span retention has removed since
    (the attempt's count of spans stored, less those it still holds; none for a forgotten todo,
    whose spans forgetting erased)."""
    waterfall = trail.waterfalls.get(group.seq)
    held = 0 if waterfall is None else waterfall.total
    forgotten = trail.todo.forgotten_at is not None
    return waterfall_html(
        waterfall,
        anchor=f"waterfall-{trail.todo.id}-{group.seq}",
        spans_dropped=row.view.spans_dropped,
        oob=oob,
        usage=row.view.usage,
        aged_out=0 if forgotten else max(0, row.view.spans_stored - held),
        retention_days=trail.span_retention_days,
    )


def _group_html(trail: Trail, group: AttemptGroup, row: AttemptRow | None, tz: dt.tzinfo) -> str:
    """An attempt group's section: head, entries, heartbeat and waterfall, end."""
    css = ""
    if row is not None:
        if row.died:
            css = " died"
        elif row.failed:
            css = " failed"
        elif row.view.outcome == Outcome.COMPLETED:
            css = " completed"
    if group.attempt is None:
        css += " gone"
    entries = "".join([entry_html(e, row, tz) for e in group.entries])
    heartbeat = waterfall = ""
    if row is not None:
        heartbeat = attempt_heartbeat_html(group, tz, oob=False)
        waterfall = attempt_waterfall_html(trail, group, row, oob=False)
    end = "" if group.end is None else entry_html(group.end, row, tz)
    head = attempt_head_html(group, row, trail.todo.max_attempts, oob=False)
    return (
        f'\n    <section class="attempt{css}" id="attempt-{group.seq}"'
        f' aria-label="Attempt {group.seq}">\n      {head}\n      {entries}\n'
        f"      {heartbeat}\n      {waterfall}\n      {end}\n    </section>\n    "
    )


def trail_blocks(
    trail: Trail, rows: Mapping[int, AttemptRow]
) -> list[tuple[SafeString, TimelineEntry | None]]:
    """The timeline's blocks as the page draws them, in order: each attempt group's section
    and each lone activity row built here (``entry_html`` and the group's parts above), with
    the entry None; the delivery and the creation as their entry, with empty markup, for the
    template's ``trail_entry`` partial. Built here rather than in the template: a trail draws
    hundreds of entries and thousands of bars."""
    tz = timezone.get_current_timezone()
    out: list[tuple[SafeString, TimelineEntry | None]] = []
    for block in trail.blocks:
        group, entry = block.group, block.entry
        if group is not None:
            html = _group_html(trail, group, rows.get(group.seq), tz)
            out.append((mark_safe(html), None))  # noqa: S308 (built of escaped parts above)
        elif entry is not None and entry.activity is not None:
            out.append((entry_html(entry, None, tz), None))
        elif entry is not None:
            out.append((SafeString(), entry))
    return out


def trail_rows(trail: Trail, now: dt.datetime) -> dict[int, AttemptRow]:
    """The trail's attempts as its page shows them, by seq: the first paint's and the live
    updates' (activity/live.py), so both say the same of a claim or an end."""
    rows: dict[int, AttemptRow] = {}
    for a in trail.attempts:
        rows[a.view.seq] = attempt_row(a.view, trail.todo, now, trail.names)
    return rows
