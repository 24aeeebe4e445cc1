"""The chaos soak (bench/soak.py): a one-minute run holds every invariant, and its comparison of
a live socket with a fresh page can tell them apart.

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
from pathlib import Path

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
