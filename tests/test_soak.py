"""The chaos soak (bench/soak.py): a one-minute run holds every invariant, its comparison of a
live socket with a fresh page can tell them apart, and its bad-input row fails on a wrong answer
or a change.

The run starts its own PostgreSQL, Redis, four web processes and two sweepers, kills and
restarts them, and needs neither the test database nor the machine's Redis: it touches nothing
else. It takes about a minute and a half (set-up, the minute, the checks).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench import soak

ROOT = Path(__file__).resolve().parent.parent
TODO = "td_soaktest"

PAGE = f"""
<span id="sb-trail-state-{TODO}"><span class="badge">claimed</span></span>
<dl class="facts" id="sb-trail-facts-{TODO}">
  <dt>Lease</dt>
  <dd><time datetime="2026-01-01T00:00:10+00:00" data-lease-left="9.0">9 s left</time></dd>
</dl>
<div id="sb-trail-actions-{TODO}"><button>Extend lease</button></div>
<div class="timeline">
  <div class="trail-entry trail-note" id="activity-1"><div class="what">first paint</div></div>
  <div class="trail-entry trail-claim" id="attempt-1-claim"><div class="what">Claimed</div></div>
  <div class="trail-entry trail-note" id="activity-2"><div class="what">step 1 of 2</div></div>
  <div id="sb-trail-live-{TODO}" class="trail-live"></div>
</div>
"""

PUSH = f"""
<div id="sb-trail-live-{TODO}" class="trail-live" hx-swap-oob="outerHTML">
<div class="trail-entry trail-claim" id="attempt-1-claim"><div class="what">Claimed</div></div>
<div class="trail-entry trail-note" id="activity-2"><div class="what">step 1 of 2</div></div>
</div>
<span id="sb-trail-state-{TODO}" hx-swap-oob="true"><span class="badge">claimed</span></span>
<dl class="facts" id="sb-trail-facts-{TODO}" hx-swap-oob="true">
  <dt>Lease</dt>
  <dd><time datetime="2026-01-01T00:00:10+00:00" data-lease-left="12.0">12 s left</time></dd>
</dl>
<div id="sb-trail-actions-{TODO}" hx-swap-oob="true"><button>Extend lease</button></div>
"""

# The page was first painted with activity 1 and no attempt: a socket opened on it shows the
# claim and activity 2 as new.
WATERMARK = soak.Watermark(TODO, seq=1, attempt=0, open=False)


def compared(push: str, page: str = PAGE) -> list[str]:
    return soak.differences(soak.view(push, TODO, None), soak.view(page, TODO, WATERMARK))


def test_a_socket_showing_what_the_page_shows_since_its_first_paint_does_not_differ() -> None:
    # The lease's countdown text differs ("12 s left" / "9 s left"); its instant does not.
    assert compared(PUSH) == []


def test_a_socket_missing_an_entry_differs_from_the_page() -> None:
    stale = re.sub(r'<div class="trail-entry trail-note" id="activity-2">.*?</div></div>', "", PUSH)
    [difference] = compared(stale)
    assert difference.startswith("activity-2: socket None")


def test_a_socket_showing_an_older_state_differs_from_the_page() -> None:
    differences = compared(PUSH, PAGE.replace(">claimed<", ">completed<"))
    assert [d.split(":")[0] for d in differences] == [f"sb-trail-state-{TODO}"]


def test_a_push_the_soak_cannot_read_is_a_difference_not_a_pass() -> None:
    assert compared("<p>nothing here</p>", "<p>nor here</p>") == [
        "socket shows no state",
        "page shows no state",
    ]


# One piece of bad input per surface, each answered as the corpus names; a restart at 100 s.
EVERY_SURFACE = [soak.BadAnswer(10.0, s, "k", "c", "400", "400") for s in soak.BAD_SURFACES]
RESTART = soak.Chaos(db_windows=[(100.0, 102.0)])


def bad_input_row(
    *answers: soak.BadAnswer,
    sent: list[soak.BadAnswer] = EVERY_SURFACE,
    bad_spans: tuple[tuple[bytes, bytes], ...] = (),
    stored: tuple[tuple[bytes, bytes], ...] = (),
    bad_reports: tuple[tuple[str, int, str], ...] = (),
    sent_reports: tuple[tuple[str, int, str], ...] = (),
    closed: dict[tuple[str, int], Any] | None = None,
    todos: tuple[tuple[Any, ...], ...] = (),
) -> soak.Row:
    ledger = soak.Ledger(bad=[*sent, *answers])
    ledger.bad_spans.update(bad_spans)
    ledger.bad_reports.extend(bad_reports)
    ledger.sent_reports.update(sent_reports)
    sampler: Any = SimpleNamespace(closed=closed or {})
    return soak.bad_input_row(ledger, RESTART, sampler, set(stored), list(todos))


def test_bad_input_answered_as_the_corpus_names_on_every_surface_holds() -> None:
    row = bad_input_row()
    assert row.ok, row.counts


def test_a_typed_answer_other_than_the_corpus_names_fails() -> None:
    row = bad_input_row(soak.BadAnswer(10.0, "mcp", "arguments", "claim id=1", "invalid", "ok"))
    assert not row.ok
    assert "1 otherwise (bad_unexpected); arguments claim id=1: ok, not invalid" in row.counts


def test_a_5xx_fails_outside_the_restart_window_and_is_not_judged_inside_it() -> None:
    outside = soak.BadAnswer(50.0, "hooks", "signed", "NaN", "400 invalid_json", "503 x")
    assert not bad_input_row(outside).ok
    row = bad_input_row(replace(outside, at=105.0))  # within the restart's 10 s grace
    assert row.ok and "not judged: 1 503 x in the restart window" in row.counts


def test_refused_input_that_changed_something_fails() -> None:
    span = (b"t" * 16, b"s" * 8)
    assert not bad_input_row(bad_spans=(span,), stored=(span,)).ok
    report = ("td_1", 1, "complete")
    closed = {("td_1", 1): (1.0, "completed", "done")}
    assert not bad_input_row(bad_reports=(report,), closed=closed).ok
    # The agent's own complete of that attempt closed it, not the refused one.
    assert bad_input_row(bad_reports=(report,), closed=closed, sent_reports=(report,)).ok
    todo = ("td_2", "pending", False, None, 1, 1.0, None, None, soak.CORPUS_QUEUE)
    assert not bad_input_row(todos=(todo,)).ok


def test_a_surface_sent_no_bad_input_fails() -> None:
    row = bad_input_row(sent=EVERY_SURFACE[:-1])
    assert not row.ok and f"NOTHING SENT to {soak.BAD_SURFACES[-1]}" in row.counts


def test_the_one_minute_soak_holds_every_invariant() -> None:
    if shutil.which("redis-server") is None:
        pytest.fail("the soak needs redis-server (Debian: apt-get install redis)", pytrace=False)
    # The soak chooses production's settings for every process it starts; nothing of the test
    # run's (its database, its settings module) goes with it.
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    done = subprocess.run(
        [sys.executable, "bench/soak.py", "--seconds", "60"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    rows = [line for line in done.stdout.splitlines() if re.search(r"  (PASS|FAIL)  ", line)]
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-4000:]
    assert len(rows) == 9 and all("  PASS  " in row for row in rows), done.stdout[-8000:]
    # The chaos happened: three kills in the minute, one restart of each server.
    chaos = r"chaos: 3 SIGKILLs .*Redis restarted 1x, PostgreSQL restarted 1x"
    assert re.search(chaos, done.stdout), done.stdout[-2000:]
