"""The Board in a real browser: Playwright drives Debian's chromium against a live daphne.

The server is ``live_daphne`` (tests/live.py), the one the MCP tests use, so a key vended in the
browser is used over MCP in the same test. It reads the test database, so every test here is
``django_db(transaction=True)``: its rows are committed for the server to see, and the flush
after the test removes them and whatever the server wrote.

Chromium is ``/usr/bin/chromium`` (``make test`` installs it, bin/setup-browser), or the binary
``CHROMIUM`` names. Playwright never downloads a browser of its own. Without chromium these
tests fail; they never skip.

Screenshots of the main pages go to the directory ``SWITCHBOARD_SCREENSHOTS_DIR`` names
(relative to the repository), .data/screenshots/ by default: outside git, since ids and times
differ on every run. ``make screenshots`` points it at docs/screenshots/ to refresh the copies
docs/guides/board.md shows.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

import pytest
from playwright.sync_api import Browser, Page, Response, ViewportSize, expect, sync_playwright

from switchboard import demo as demo_data
from switchboard.models import Endpoint
from tests.live import ROOT, LiveServer
from tests.reach import expire_lease
from todos import lifecycle

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Headless, and quiet on a machine without a network: without the background-networking flags
# chromium keeps trying to reach its update, sync and field-trial servers.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = ROOT / (os.environ.get("SWITCHBOARD_SCREENSHOTS_DIR") or ".data/screenshots")
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}
# Generous for a loaded CI machine, short enough that a missing element fails in seconds.
TIMEOUT_MS = 10_000
PASSWORD = "correct horse battery staple"  # tests/factories.py's, and the demo operator's here

expect.set_options(timeout=TIMEOUT_MS)


@pytest.fixture(scope="package")
def browser(
    django_db_setup: None, live_daphne: LiveServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Browser]:
    """One chromium for the e2e tests; each test gets its own context (cookies, storage).

    Package-scoped, and after the database and the server are up: Playwright's sync API keeps an
    asyncio loop marked running in this thread while it is open. Django refuses ORM calls under
    a running loop unless DJANGO_ALLOW_ASYNC_UNSAFE is set; it is set here, for the test
    process only (never for the server, see tests/live.py) and only until the browser closes,
    so the MCP tests and the rest of the suite run with Django's guard as usual.
    """
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"no chromium at {CHROMIUM}: run `sh bin/setup-browser` (make test does), "
            "or set CHROMIUM=/path/to/chromium",
            pytrace=False,
        )
    home = tmp_path_factory.mktemp("chromium-home")
    # HOME and XDG_* keep chromium's own files (crash reports, caches) out of the real home.
    env: dict[str, str | float | bool] = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
    }
    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        # Playwright gives the launch a fresh temporary --user-data-dir, deleted on close.
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, env=env
        )
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Board:
    """One browser context on the live server: a person at the Board."""

    live: LiveServer
    page: Page
    errors: list[str] = field(default_factory=list)

    def goto(self, path: str) -> Response:
        response = self.page.goto(self.live.url(path))
        assert response is not None
        return response

    def login(self, username: str, password: str = PASSWORD) -> None:
        self.goto("/login/")
        self.page.get_by_label("Username").fill(username)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Log in").click()
        expect(self.page.get_by_role("heading", name="Todos", exact=True)).to_be_visible()

    def tidy_for_the_docs(self, secret: str | None = None, masked: str = "") -> None:
        """Mask ``secret`` in every text on the page (where it is shown and in configuration
        blocks), and show the test server's random port as ``make run``'s 8000."""
        replacements = [[self.live.base, "http://127.0.0.1:8000"]]
        if secret:
            replacements.append([secret, masked])
        self.page.evaluate(
            """([replacements]) => {
                const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
                for (let node = walker.nextNode(); node; node = walker.nextNode()) {
                    for (const [from, to] of replacements) {
                        node.nodeValue = node.nodeValue.replaceAll(from, to);
                    }
                }
            }""",
            [replacements],
        )
        text = self.page.locator("body").inner_text()
        assert self.live.base not in text and (not secret or secret not in text)

    def shot(self, name: str) -> Path:
        """Write <SCREENSHOTS>/<name>.png: the whole page at the viewport's width.

        The window is made as tall as the page for the shot (then restored), so the rail and
        the drawer, which are sized to the window, are drawn as a window that tall shows them;
        a full-page capture of a short window would cut them at its height.
        """
        page = self.page
        # At rest: no htmx request in flight, fonts loaded, nothing hovered, scrolled to the top.
        page.wait_for_load_state("networkidle")
        page.evaluate("document.fonts.ready.then(() => true)")
        page.mouse.move(0, 0)
        viewport = page.viewport_size
        assert viewport is not None
        height = viewport["height"]
        for _ in range(3):  # a taller window lets the drawer grow, and the page with it
            needed = int(page.evaluate("document.documentElement.scrollHeight"))
            if needed <= height:
                break
            height = needed
            page.set_viewport_size({"width": viewport["width"], "height": height})
        page.evaluate("window.scrollTo(0, 0)")
        path = SCREENSHOTS / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            page.screenshot(path=path, full_page=True, animations="disabled")
        finally:
            page.set_viewport_size(viewport)
        assert png_width(path) == viewport["width"]
        return path


def png_width(path: Path) -> int:
    """The width a PNG's IHDR chunk declares."""
    header = path.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", path
    return int(struct.unpack(">I", header[16:20])[0])


@pytest.fixture
def open_board(browser: Browser, live_daphne: LiveServer) -> Iterator[Callable[..., Board]]:
    """Open a fresh browser context (desktop width unless ``viewport`` says otherwise).

    A script error on any page fails the test: the Board must run clean.
    """
    boards: list[Board] = []

    def open_(viewport: ViewportSize | None = None) -> Board:
        context = browser.new_context(viewport=viewport or DESKTOP, device_scale_factor=1)
        context.set_default_timeout(TIMEOUT_MS)
        board = Board(live_daphne, context.new_page())
        board.page.on("pageerror", lambda exc: board.errors.append(str(exc)))
        boards.append(board)
        return board

    yield open_
    for board in boards:
        board.page.context.close()
    assert not [error for board in boards for error in board.errors]


@pytest.fixture
def board(open_board: Callable[..., Board]) -> Board:
    return open_board()


@dataclass(frozen=True)
class Demo:
    """``make run``'s demo data (switchboard/demo.py) plus a todo that died, then failed."""

    seeded: demo_data.Seeded
    endpoint_id: UUID
    died_then_failed: str

    @property
    def todo_ids(self) -> dict[str, str]:
        return self.seeded.todo_ids


@pytest.fixture
def demo(transactional_db: None) -> Demo:
    """What a new operator sees after ``make run``, logged in as ``demo`` with PASSWORD."""
    seeded = demo_data.seed(PASSWORD)
    assert seeded is not None
    endpoint_id = Endpoint.objects.get(slug=demo_data.ENDPOINT_SLUG).id
    todo = lifecycle.create(
        endpoint_id,
        queue="ci-failures",
        title="Deploy to staging times out",
        payload={"repo": "example/shop", "run_id": 8830, "job": "deploy-staging"},
        work_order="Find out why the deploy job hangs after the migrations and fix it.",
        max_attempts=4,
    )
    # The first agent run vanished: its lease lapsed and the sweeper reaped it (died).
    lifecycle.claim(endpoint_id, todo.id, owner=demo_data.BOT, claimant="demo-bot/run-6")
    expire_lease(todo.id)
    assert todo.id in lifecycle.reap().requeued
    # The second reported failure (failed), and a retry is scheduled.
    lifecycle.claim(endpoint_id, todo.id, owner=demo_data.BOT, claimant="demo-bot/run-7")
    lifecycle.fail(
        endpoint_id,
        todo.id,
        owner=demo_data.BOT,
        summary="The migration step waits on a lock held by the old release; needs a human.",
        retryable=True,
        retry_after_seconds=3600,
    )
    return Demo(seeded, endpoint_id, todo.id)
