"""The Board's todo pages: the list, the drawer (the list's side panel), the trail page (one
todo's whole story), operator actions.

Views parse, make one call (a read in ``todos.queries`` or a transition in ``todos.lifecycle``)
and render. Domain errors are mapped here and nowhere else: ``TodoNotFound`` → 404,
``LeaseConflict`` → 409, ``InvalidInput`` → 400, each rendered inline in the drawer (htmx is
configured in base.html to swap those three), never Django's error page.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from html import escape
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.contrib import messages
from django.http import HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET

from activity.trail import CLAIM, END, AttemptGroup, TimelineEntry, Trail, todo_trail
from attempts.models import DIED_OUTCOMES, ClaimerKind, Outcome
from attempts.types import AttemptView
from otlp.waterfall import Waterfall, waterfall_html
from switchboard.lib import jsonlimits
from switchboard.lib.board import BoardRequest, login_required
from switchboard.lib.errors import InvalidInput, LeaseConflict, LifecycleError, TodoNotFound
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import lifecycle, limits, queries, states
from todos.intake.board import present_trace
from todos.models import Todo
from todos.states import State

DRAWER = "todos/todo_detail.html#drawer"
ROW = "todos/todo_list.html#row"

# --- presentation ----------------------------------------------------------------------------

_OUTCOME_WORDS = {
    Outcome.LEASE_EXPIRED: "died: lease expired, taken over",
    Outcome.REAPED: "died: lease expired, reaped",
    Outcome.FAILED: "failed: reported by its holder",
    Outcome.COMPLETED: "completed",
    Outcome.RELEASED: "released",
    Outcome.CANCELED: "canceled",
    Outcome.REVOKED: "revoked with its endpoint",
}


@dataclass(frozen=True, slots=True)
class AttemptRow:
    """An attempt as the drawer shows it."""

    view: AttemptView
    claimer: str
    duration: str
    outcome_word: str
    outcome_class: str
    artifact_link: bool

    @property
    def died(self) -> bool:
        return self.view.outcome in DIED_OUTCOMES

    @property
    def failed(self) -> bool:
        return self.view.outcome == Outcome.FAILED


def _duration(start: dt.datetime, end: dt.datetime) -> str:
    seconds = max(0, int((end - start).total_seconds()))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def outcome_badge(outcome: str | None) -> tuple[str, str]:
    """An attempt's outcome as its badge shows it, words and class, the same on the drawer,
    the trail page and the Activity feed: died and failed told apart."""
    if outcome is None:
        return "in progress", "outcome-open"
    if outcome in DIED_OUTCOMES:
        return _OUTCOME_WORDS[Outcome(outcome)], "outcome-died"
    if outcome in Outcome.values:
        return _OUTCOME_WORDS.get(Outcome(outcome), outcome), f"outcome-{outcome}"
    return outcome, "outcome-other"


def _attempt_row(a: AttemptView, todo: Todo, now: dt.datetime) -> AttemptRow:
    if a.claimer_kind == ClaimerKind.OWNER:
        claimer = f"operator {a.owner}"
    elif a.claimer_endpoint_id == todo.endpoint_id:
        claimer = f"endpoint {todo.endpoint.slug}"
    else:  # not expected (claims are scoped to the todo's endpoint), but say what is stored
        claimer = f"endpoint {a.claimer_endpoint_id}"
    word, css = outcome_badge(a.outcome)
    end = a.ended_at or now
    return AttemptRow(
        view=a,
        claimer=claimer,
        duration=_duration(a.claimed_at, end) + ("" if a.ended_at else " so far"),
        outcome_word=word,
        outcome_class=css,
        artifact_link=bool(a.artifact) and urlsplit(a.artifact or "").scheme == "https",
    )


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _drawer_context(request: BoardRequest, todo_id: str, **extra: Any) -> dict[str, Any]:
    # The newest 200 attempts at most; the drawer says how many stored ones it leaves out.
    data = queries.todo_detail(_scope(request), todo_id, queries.ATTEMPTS_LIMIT_MAX)
    now = timezone.now()
    stored = data.history.total - data.history.pruned
    revoked = data.todo.endpoint.revoked_at is not None
    return {
        "todo": data.todo,
        "attempts": [_attempt_row(a, data.todo, now) for a in data.history.attempts],
        "attempts_total": data.history.total,
        "attempts_pruned": data.history.pruned,
        "attempts_not_shown": max(0, stored - len(data.history.attempts)),
        # The buttons the statements would accept; they still decide.
        "actions": states.operator_actions(data.todo, now, endpoint_revoked=revoked),
        # Autoescaped where rendered: payloads and results are untrusted input.
        "payload_json": _pretty(data.todo.payload),
        "result_json": None if data.todo.result is None else _pretty(data.todo.result),
        **extra,
    }


# --- pages -----------------------------------------------------------------------------------


def _scope(request: BoardRequest) -> Scope:
    return Scope.of_human(request.user.id)


# The list's sortable columns: the column, and the sort a first click asks for.
SORTABLE_COLUMNS = {"title": "title", "state": "state", "queue": "queue"}
SORTABLE_COLUMNS |= {"created": "-created", "updated": "-updated", "finished": "-finished"}
SORT_CHOICES = [
    ("-created", "newest first"),
    ("created", "oldest first"),
    ("-updated", "recently updated"),
    ("updated", "least recently updated"),
    ("-finished", "recently finished"),
    ("finished", "finished longest ago"),
    ("title", "title A to Z"),
    ("-title", "title Z to A"),
    ("state", "state A to Z"),
    ("-state", "state Z to A"),
    ("queue", "queue A to Z"),
    ("-queue", "queue Z to A"),
]


def _filters(request: BoardRequest) -> queries.TodoFilters:
    """The list's filters from the query string: the list's, and the bulk actions' own."""
    return queries.TodoFilters.parse(request.GET)


def _query(filters: queries.TodoFilters, **extra: str) -> str:
    return urlencode(filters.to_params() | {k: v for k, v in extra.items() if v})


def _sort_links(filters: queries.TodoFilters) -> dict[str, tuple[str, str]]:
    """Per sortable column, the query its header links to and the arrow it shows now: a click
    on the column in force turns its direction round, on another sorts by it."""
    links = {}
    for column, first in SORTABLE_COLUMNS.items():
        current = filters.order.lstrip("-") == column
        target = filters.order.removeprefix("-") if filters.order.startswith("-") else ""
        sort = (target or f"-{column}") if current else first
        arrow = ("↓" if filters.order.startswith("-") else "↑") if current else ""
        links[column] = (_query(replace(filters, sort=sort)), arrow)
    return links


@login_required
@require_GET
def todo_list(request: BoardRequest) -> HttpResponse:
    """The human's todos, filtered, searched and sorted (newest first unless asked), with
    per-state counts; rows open the drawer. Filters it cannot read are said on the page, and
    match nothing (``TodoFilters``)."""
    filters = _filters(request)
    after = queries.Cursor.decode(request.GET.get("after", ""))  # malformed: from the top
    page = queries.todo_page(_scope(request), filters, after, size=queries.PAGE_SIZE)
    counts = queries.state_counts(_scope(request), filters)
    endpoints = Endpoint.objects.filter(owner_id=request.user.id).only("slug", "revoked_at")
    base = filters.without_state()
    tabs = [("all", "all", counts["all"], _query(base))]
    tabs += [(s.value, s.value, counts[s.value], _query(base, state=s.value)) for s in State]
    tabs.append(("dead", "dead letter", counts["dead_letter"], _query(base, dead="1")))
    current_tab = "dead" if filters.dead_letter else (filters.state or "all")
    paused = queries.paused_queues(_scope(request))
    return render(
        request,
        "todos/todo_list.html",
        {
            "section": "todos",
            "filters": filters,
            "filter_errors": filters.errors,
            "queue_text": filters.to_params().get("queue", ""),
            "page": page,
            "tabs": tabs,
            "current_tab": current_tab,
            "states": State.values,
            "endpoints": endpoints,
            "sorts": SORT_CHOICES,
            "sort_links": _sort_links(filters),
            "next_query": _query(filters, after=page.next_cursor.encode())
            if page.next_cursor
            else None,
            "first_query": _query(filters) if after else None,
            "query": _query(filters),
            # The human's paused queues, and whether the filter names one queue to pause.
            "paused": paused,
            "queue_paused": any(
                p.endpoint.slug == filters.endpoint and p.queue == filters.queue for p in paused
            ),
        },
    )


def possible_id(todo_id: str) -> bool:
    """Whether ``todo_id`` could name a todo: one PostgreSQL cannot compare (NUL, a lone
    surrogate) names none, and asking would be a server error."""
    return jsonlimits.text_problem(todo_id) is None


def _not_found(request: BoardRequest, todo_id: str) -> HttpResponse:
    template = "todos/todo_detail.html#missing" if request.htmx else "todos/todo_missing.html"
    return render(request, template, {"section": "todos", "todo_id": todo_id}, status=404)


@login_required
@require_GET
def todo_detail(request: BoardRequest, todo_id: str) -> HttpResponse:
    """The drawer for htmx (the list's side panel); otherwise the trail page, the todo's story."""
    if not possible_id(todo_id):
        return _not_found(request, todo_id)
    if not request.htmx:
        return _trail_page(request, todo_id)
    try:
        context = _drawer_context(request, todo_id, section="todos")
    except TodoNotFound:
        return _not_found(request, todo_id)
    # Only the list loads the drawer with htmx.
    context["in_list"] = True
    return render(request, DRAWER, context)


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
        what = f"\n    {entry.activity.html}\n  "
    elif entry.kind == CLAIM and row is not None:
        what = _claim_what(row)
    elif entry.kind == END and row is not None:
        what = _end_what(row)
    else:  # a claim or an end has its attempt's row (trail_rows reads every attempt it groups)
        raise ValueError(f"no markup for a {entry.kind} entry without its attempt")
    return entry.framed(what, tz)


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
        f"last heartbeat {at.astimezone(tz).strftime('%Y-%m-%d %H:%M:%S')}"
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
    todo: Todo, group: AttemptGroup, row: AttemptRow, waterfall: Waterfall | None, *, oob: bool
) -> SafeString:
    """An attempt group's waterfall (``otlp.waterfall.waterfall_html``), by its page id."""
    return waterfall_html(
        waterfall,
        anchor=f"waterfall-{todo.id}-{group.seq}",
        spans_dropped=row.view.spans_dropped,
        oob=oob,
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
        waterfall = attempt_waterfall_html(
            trail.todo, group, row, trail.waterfalls.get(group.seq), oob=False
        )
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
        row = _attempt_row(a.view, trail.todo, now)
        if a.claimer_name:  # an operator's claim: the human's name, not "human:<id>"
            row = replace(row, claimer=f"operator {a.claimer_name}")
        rows[a.view.seq] = row
    return rows


def _trail_page(
    request: BoardRequest, todo_id: str, *, error: str | None = None, status: int = 200
) -> HttpResponse:
    """The trail page: the todo, its operator actions, and its timeline (activity/trail.py).

    A fixed number of queries whatever the number of attempts and activity rows: the trail's
    four reads, plus the session, the user and the rail's unread count.
    """
    try:
        trail = todo_trail(request.user.id, todo_id)
    except TodoNotFound:
        return _not_found(request, todo_id)
    todo, event = trail.todo, trail.event
    now = timezone.now()
    rows = trail_rows(trail, now)
    verification = event.verification if event and isinstance(event.verification, dict) else {}
    context = {
        "section": "todos",
        "page": True,
        "todo": todo,
        "trail": trail,
        "blocks": trail_blocks(trail, rows),
        "attempts_total": todo.attempts_total,
        "attempts_pruned": todo.attempts_pruned,
        "attempts_not_shown": trail.attempts_not_shown,
        # The buttons the statements would accept; they still decide.
        "actions": states.operator_actions(
            todo, now, endpoint_revoked=todo.endpoint.revoked_at is not None
        ),
        "error": error,
        # Autoescaped where rendered: payloads, headers and results are untrusted input.
        "payload_json": _pretty(todo.payload),
        "result_json": None if todo.result is None else _pretty(todo.result),
        "event": event,
        "event_trace": present_trace(event.routing_trace) if event else [],
        "verification": str(verification.get("result") or "—"),
        "verification_json": _pretty(event.verification) if event else "",
        "headers_json": _pretty(event.headers) if event else "",
        "event_payload_json": _pretty(event.payload) if event else "",
    }
    return render(request, "todos/todo_detail.html", context, status=status)


# --- operator actions --------------------------------------------------------------------------


def _ttl(request: BoardRequest) -> int | None:
    text = request.POST.get("lease_ttl_seconds", "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise InvalidInput("lease_ttl_seconds", "must be a whole number of seconds") from None


def _text(request: BoardRequest, name: str) -> str | None:
    return request.POST.get(name, "").strip() or None


def _claim(request: BoardRequest, human_id: int, todo_id: str) -> Any:
    claimant = _text(request, "claimant") or f"{request.user.get_username()} on the Board"
    return lifecycle.operator_claim(
        human_id, todo_id, lease_ttl_seconds=_ttl(request), claimant=claimant
    )


def _answer(request: BoardRequest, human_id: int, todo_id: str) -> Any:
    """Answer an interrupted todo's question (A2A input-required): the holder resumes and
    reads the answer under ``input_request.response`` (docs/guides/a2a.md)."""
    text = _text(request, "answer")
    if text is None:
        raise InvalidInput("answer", "must not be empty")
    response = {"text": text, "from": f"human:{request.user.get_username()}"}
    return lifecycle.resume(human_id, todo_id, response=response)


ACTIONS: dict[str, tuple[str, Callable[[BoardRequest, int, str], Any]]] = {
    "claim": ("Claimed.", _claim),
    "complete": (
        "Completed.",
        lambda r, h, t: lifecycle.operator_complete(h, t, summary=_text(r, "summary")),
    ),
    "fail": (
        "Failed.",
        lambda r, h, t: lifecycle.operator_fail(
            h, t, summary=_text(r, "summary"), retryable=r.POST.get("retryable") == "on"
        ),
    ),
    "release": (
        "Released back to its queue.",
        lambda r, h, t: lifecycle.operator_release(h, t, summary=_text(r, "summary")),
    ),
    "extend": (
        "Lease extended.",
        lambda r, h, t: lifecycle.operator_extend(h, t, lease_ttl_seconds=_ttl(r)),
    ),
    "retry": (
        "Sent back to pending with a fresh budget.",
        lambda r, h, t: lifecycle.operator_retry(h, t),
    ),
    "cancel": (
        "Canceled.",
        lambda r, h, t: lifecycle.operator_cancel(h, t, reason=_text(r, "reason")),
    ),
    "answer": ("Answered; the holder resumes.", _answer),
}


def _outcome_notice(action: str, result: Any, done: str) -> str:
    """The notice for an action that succeeded: a release that ended the todo's last allowed
    attempt dead-lettered it (docs/decisions/0012-release-budget.md), and says so."""
    if action == "release" and getattr(result.todo, "dead_letter", False):
        return "Released on its last allowed attempt: dead-lettered (Retry gives a fresh budget)."
    return done


def _error_message(exc: LifecycleError) -> str:
    if isinstance(exc, LeaseConflict):
        return (
            f"Could not {exc.transition.removeprefix('operator_')}: the todo has moved on since"
            " this page was drawn (another holder, or a state that does not allow it)."
            " It is shown as it is now."
        )
    return f"Nothing changed: {exc}."


@login_required
def todo_action(request: BoardRequest, todo_id: str, action: str) -> HttpResponse:
    """POST one operator action; answer the re-rendered drawer (and, for htmx, the row)."""
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    if action not in ACTIONS or not possible_id(todo_id):
        return _not_found(request, todo_id)
    done, call = ACTIONS[action]
    status = 200
    error = None
    try:
        result = call(request, request.user.id, todo_id)
    except TodoNotFound:
        return _not_found(request, todo_id)
    except LeaseConflict as exc:
        status, error = 409, _error_message(exc)
    except InvalidInput as exc:
        status, error = 400, _error_message(exc)
    else:
        done = _outcome_notice(action, result, done)
    if not request.htmx and error is None:
        messages.success(request, done)
        return redirect("todo_detail", todo_id=todo_id)
    if not request.htmx:
        return _trail_page(request, todo_id, error=error, status=status)
    try:
        context = _drawer_context(request, todo_id, section="todos", error=error)
    except TodoNotFound:  # deleted by retention between the action and this read
        return _not_found(request, todo_id)
    context["notice"] = done if error is None else None
    context["in_list"] = _from_the_list(request)
    body = render_to_string(DRAWER, context, request)
    if context["in_list"]:
        # The row, swapped out of band into the list the drawer sits beside.
        body += render_to_string(ROW, {"todo": context["todo"], "oob": True}, request)
    return HttpResponse(body, status=status)


def _from_the_list(request: BoardRequest) -> bool:
    """Whether the htmx request came from the list page (the only page with rows)."""
    return urlsplit(request.htmx.current_url or "").path == reverse("todo_list")


# --- bulk actions and queue pauses ------------------------------------------------------------

BULK_CONFIRM = "todos/bulk_confirm.html"
QUEUE_CONFIRM = "todos/queue_confirm.html"
# What each bulk action says: the verb, what it acts on, what it did.
BULK_WORDS = {
    "retry": ("Retry", "dead letters", "Retried"),
    "cancel": ("Cancel", "unfinished todos", "Canceled"),
}


def _seen_at(request: BoardRequest) -> dt.datetime:
    try:
        seen_at = dt.datetime.fromisoformat(request.POST.get("seen_at", ""))
    except ValueError:
        raise InvalidInput("seen_at", "must be the time of the count the page showed") from None
    if seen_at.tzinfo is None:
        raise InvalidInput("seen_at", "must carry its time zone")
    return seen_at


def _counted(request: BoardRequest) -> int | None:
    text = request.POST.get("counted", "")
    return int(text) if text.isdigit() and len(text) < 10 else None


@login_required
def bulk_action(request: BoardRequest, action: str) -> HttpResponse:
    """A bulk action on the list's current filter (its query string, on both requests).

    GET: the confirm page, with how many todos the action would change now (at most
    ``limits.BULK_MAX``, said when there are more). POST: the action, re-checking every todo
    against the count's time (``seen_at``), then back to the list with how many it changed.
    """
    if action not in BULK_WORDS:
        return _not_found(request, action)
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    filters = _filters(request)
    verb, things, done = BULK_WORDS[action]
    context: dict[str, Any] = {
        "section": "todos",
        "action": action,
        "verb": verb,
        "things": things,
        "filters": filters,
        "query": _query(filters),
        "cap_text": f"{limits.BULK_MAX:,}",
    }
    if request.method == "POST":
        try:
            seen_at = _seen_at(request)
            if action == "retry":
                result = lifecycle.bulk_retry(request.user.id, filters, seen_at=seen_at)
            else:
                result = lifecycle.bulk_cancel(
                    request.user.id, filters, seen_at=seen_at, reason=_text(request, "reason")
                )
        except InvalidInput as exc:
            context["error"] = _error_message(exc)
            return render(request, BULK_CONFIRM, context, status=400)
        acted, counted = len(result.acted), _counted(request)
        notice = f"{done} {acted} {'todo' if acted == 1 else 'todos'}."
        if counted is not None and acted < min(counted, limits.BULK_MAX):
            notice += f" {min(counted, limits.BULK_MAX) - acted} of those counted had changed."
        messages.success(request, notice)
        return redirect(reverse("todo_list") + (f"?{context['query']}" if context["query"] else ""))
    count = queries.bulk_count(_scope(request), filters, action, limits.BULK_MAX + 1)
    context |= {
        "count": min(count.n, limits.BULK_MAX),
        "count_text": f"{min(count.n, limits.BULK_MAX):,}",
        "more": count.n > limits.BULK_MAX,
        "seen_at": count.seen_at.isoformat(),
    }
    return render(request, BULK_CONFIRM, context)


@login_required
def queue_action(request: BoardRequest, action: str) -> HttpResponse:
    """Pause or resume one queue of one of the human's endpoints (``?endpoint=&queue=``).

    GET: the confirm page, with the queue's summary. POST: the change, then back to the list
    filtered on that queue.
    """
    if action not in ("pause", "resume"):
        return _not_found(request, action)
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    slug = request.GET.get("endpoint", "").strip()
    queue = request.GET.get("queue", "").strip()
    context: dict[str, Any] = {
        "section": "todos",
        "action": action,
        "endpoint_slug": slug,
        "queue": queue,
        "query": _query(queries.TodoFilters(endpoint=slug, queue=queue)),
    }
    endpoint = (
        Endpoint.objects.filter(owner_id=request.user.id, slug=slug).first()
        if slug and possible_id(slug)
        else None
    )
    try:
        if endpoint is None:
            raise InvalidInput("endpoint", "choose one of your endpoints")
        limits.check_name("queue", queue)
        if request.method == "POST":
            change = (lifecycle.pause_queue if action == "pause" else lifecycle.resume_queue)(
                endpoint.id, queue, human_id=request.user.id
            )
        else:
            scope = Scope.of_endpoint(endpoint.id)
            context["summary"] = queries.queue_summary(scope, queue)
            context["paused"] = bool(queries.paused_queues(scope, [queue]))
    except InvalidInput as exc:
        context["error"] = _error_message(exc)
        return render(request, QUEUE_CONFIRM, context, status=400)
    if request.method == "GET":
        return render(request, QUEUE_CONFIRM, context)
    where = f"{queue} on {slug}"
    if action == "pause":
        notice = f"Paused {where}." if change.changed else f"{where} was already paused."
    else:
        notice = f"Resumed {where}." if change.changed else f"{where} was not paused."
    messages.success(request, notice[0].upper() + notice[1:])
    return redirect(reverse("todo_list") + f"?{context['query']}")
