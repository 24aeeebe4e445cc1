"""The keyset cursors' shared encoding (switchboard/lib/keyset.py)."""

from __future__ import annotations

import base64
import datetime as dt
import json

import pytest

from activity.feed import Cursor as FeedCursor
from switchboard.lib import keyset
from todos.filters import Cursor as TodoCursor
from todos.intake.source_views import EventCursor

AT = dt.datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=dt.UTC)


def test_a_cursor_round_trips_with_its_microseconds() -> None:
    text = keyset.encode([keyset.stamp(AT), "td_x", 3])

    assert "=" not in text
    stamp, todo_id, seq = keyset.decode(text) or []
    assert keyset.parse_stamp(stamp) == AT
    assert (todo_id, seq) == ("td_x", 3)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not base64!",
        base64.urlsafe_b64encode(b"{not json").decode(),
        base64.urlsafe_b64encode(b'{"a": 1}').decode(),  # JSON, not a list
        base64.urlsafe_b64encode(b"\xff\xfe").decode(),  # not UTF-8
    ],
)
def test_anything_but_an_encoded_list_decodes_to_none(text: str) -> None:
    assert keyset.decode(text) is None


def test_a_cursor_longer_than_its_cap_is_refused() -> None:
    text = keyset.encode(["x" * 300])

    assert keyset.decode(text) is not None
    assert keyset.decode(text, max_chars=200) is None


def test_a_naive_time_is_no_stamp() -> None:
    assert keyset.parse_stamp("2026-03-01T12:30:15") is None
    assert keyset.parse_stamp(17) is None
    assert keyset.parse_stamp(keyset.stamp(AT)) == AT


def test_the_three_cursors_round_trip_through_the_helper() -> None:
    todo = TodoCursor(AT, "td_aaaaaaaaaaaaaaaaaaaa", "title", "a title")
    feed = FeedCursor(AT, "attempt_end", "td_aaaaaaaaaaaaaaaaaaaa", 2)
    event = EventCursor(AT, 41)

    assert TodoCursor.decode(todo.encode()) == todo
    assert FeedCursor.decode(feed.encode()) == feed
    assert EventCursor.decode(event.encode()) == event


def test_a_feed_cursor_in_the_earlier_spelling_still_reads() -> None:
    # Spaces after the commas and a "+00:00" offset: what a page already open may send back.
    raw = json.dumps([AT.isoformat(), "attempt_end", "td_aaaaaaaaaaaaaaaaaaaa", 2])
    text = base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    assert FeedCursor.decode(text) == FeedCursor(AT, "attempt_end", "td_aaaaaaaaaaaaaaaaaaaa", 2)
