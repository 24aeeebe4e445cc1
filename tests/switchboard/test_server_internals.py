"""The capped server starts only on the daphne and Twisted it was proven on
(switchboard/lib/server.py, docs/decisions/0025-vendor-boundaries.md).

``tests/switchboard/test_server.py`` proves the caps on a real server; this proves the tripwire:
the installed releases are the proven ones, and a different release or a missing internal makes
the server refuse to start with a clear reason and a non-zero exit, rather than serve uncapped.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from daphne.server import Server as DaphneServer
from twisted.web import http

from switchboard.lib import server as capped

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_daphne_and_twisted_are_proven_and_have_every_internal() -> None:
    assert capped.unproven() == []
    capped.require_proven()  # returns: nothing to refuse


def test_another_daphne_minor_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    real = capped.installed_version
    monkeypatch.setattr(
        capped, "installed_version", lambda d: "4.3.0" if d == "daphne" else real(d)
    )
    assert capped.unproven() == ["daphne 4.3.0 is not a proven release (4.2.x)"]
    with pytest.raises(SystemExit, match=r"refusing to start .*daphne 4\.3\.0"):
        capped.require_proven()


def test_a_missing_request_hook_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(http.Request, "handleContentChunk")
    assert capped.unproven() == ["twisted.web.http.Request has no handleContentChunk()"]


def test_a_daphne_run_that_no_longer_assigns_its_factory_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def run(self: DaphneServer) -> None:
        """A run() that builds its factory some other way: the cap would never be installed."""

    monkeypatch.setattr(DaphneServer, "run", run)
    assert capped.unproven() == ["daphne's Server.run() no longer assigns self.http_factory"]


def test_the_command_line_exits_non_zero_with_the_reason_before_serving() -> None:
    script = (
        "from switchboard.lib import server\n"
        "server.PROVEN_MINORS['twisted'] = frozenset({'1.0'})\n"
        "server.main(['--port', '0', 'switchboard.asgi:application'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert "refusing to start a server that could not cap request bodies" in done.stderr
    assert "is not a proven release (1.0.x)" in done.stderr
    assert "Listening" not in done.stderr + done.stdout
