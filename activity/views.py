"""The Activity feed page, /activity/: what happened across the human's todos, newest first.

Parse the filters and the cursor, make one read (``activity.feed.feed_page``), render. Every
parameter is untrusted: an unknown kind or outcome means "any", a cursor that does not decode
starts the feed over, and a value PostgreSQL text cannot hold matches nothing; none of them is
an error. Opening the first page marks the feed read (``humans.activity_seen_at``, written only
when that changes what the badge counts); turning pages does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from activity import feed
from activity.context_processors import mark_read
from switchboard.lib.board import BoardRequest, login_required
from switchboard.models import Endpoint
from todos.views import outcome_badge

KIND_WORDS = {
    "attempt_end": "attempt ended",
    "note": "note",
    "human_action": "Board action",
    "retried": "retried",
    "a2a_state": "A2A",
}


def _filters(request: BoardRequest) -> feed.FeedFilters:
    return feed.FeedFilters.parse(
        endpoint=request.GET.get("endpoint", ""),
        queue=request.GET.get("queue", ""),
        kind=request.GET.get("kind", ""),
        outcome=request.GET.get("outcome", ""),
    )


def _query(filters: feed.FeedFilters, **extra: str) -> str:
    params = {
        "endpoint": filters.endpoint,
        "queue": filters.queue,
        "kind": filters.kind,
        "outcome": filters.outcome,
        **extra,
    }
    return urlencode({k: v for k, v in params.items() if v})


@dataclass(frozen=True, slots=True)
class EntryRow:
    """An entry as the feed shows it."""

    entry: feed.FeedEntry
    kind_word: str
    outcome_word: str
    outcome_class: str


def _row(entry: feed.FeedEntry) -> EntryRow:
    word, css = outcome_badge(entry.outcome) if entry.kind == feed.ATTEMPT_END else ("", "")
    return EntryRow(entry, KIND_WORDS.get(entry.kind, entry.kind), word, css)


def _mark_read(request: BoardRequest, filters: feed.FeedFilters, page: feed.FeedPage) -> None:
    """The first page was opened: everything up to now is read.

    The write is skipped when it would change nothing the badge counts: the unfiltered first
    page shows the newest entry, and it is no newer than the last visit. So a human who keeps
    the feed open and reloads it does not write their row on every load.
    """
    seen = request.user.activity_seen_at
    newest = page.entries[0].at if page.entries else None
    unfiltered = filters == feed.FeedFilters()
    if seen is None or not unfiltered or (newest is not None and newest > seen):
        feed.mark_seen(request.user.id)
    mark_read(request)


@login_required
@require_GET
def activity_feed(request: BoardRequest) -> HttpResponse:
    """The human's feed, newest first, filtered, a page at a time; each entry links to its
    place on its todo's trail page."""
    filters = _filters(request)
    after = feed.Cursor.decode(request.GET.get("after", ""))
    page = feed.feed_page(request.user.id, filters, after, size=feed.PAGE_SIZE)
    if after is None:
        _mark_read(request, filters, page)
    endpoints = Endpoint.objects.filter(owner_id=request.user.id).only("slug", "revoked_at")
    return render(
        request,
        "activity/feed.html",
        {
            "section": "activity",
            "filters": filters,
            "rows": [_row(e) for e in page.entries],
            "endpoints": endpoints,
            "kinds": [(k, KIND_WORDS[k]) for k in feed.KINDS],
            "outcomes": [(o, outcome_badge(o)[0]) for o in feed.OUTCOMES],
            "next_query": _query(filters, after=page.next_cursor.encode())
            if page.next_cursor
            else None,
            "first_query": _query(filters) if after else None,
        },
    )
