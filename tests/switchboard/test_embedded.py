"""The zero-configuration database (switchboard/embedded.py): processes share one embedded server
for a data directory, and the last one to exit stops it, crashes included.

Each test runs real processes (the venv's interpreter) against a fresh data directory; nothing
here touches the test database. Every wait is bounded, and whatever a test leaves running (its
holder processes, the server) is stopped by pid at teardown.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 5.0

# A process that attaches to the embedded server for a data directory, proves a query works,
# reports what it sees, and holds its handle until its stdin closes; then it exits normally
# (atexit runs, as on Ctrl-C or a clean shutdown).
HOLDER = """
import json, os, sys
from pathlib import Path

import psycopg

from switchboard import embedded

pgdata = Path(sys.argv[1])
url = embedded.database_url(pgdata)
with psycopg.connect(url) as conn:
    answer, started, data_directory = conn.execute(
        "SELECT 41 + 1, pg_postmaster_start_time()::text, current_setting('data_directory')"
    ).fetchone()
postmaster_pid = int((pgdata / "postmaster.pid").read_text().split()[0])
print(json.dumps({
    "pid": os.getpid(), "url": url, "answer": answer, "started": started,
    "data_directory": data_directory, "postmaster_pid": postmaster_pid,
}), flush=True)
sys.stdin.read()
"""


@dataclass
class Holder:
    proc: subprocess.Popen[str]
    info: dict[str, Any]

    def release(self) -> None:
        """Close stdin: the holder exits normally, running its atexit handlers."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=START_TIMEOUT)
        assert self.proc.returncode == 0, self.proc.stderr.read() if self.proc.stderr else ""

    def crash(self) -> None:
        """SIGKILL: the holder dies without running atexit, leaving its pid in the handle list."""
        self.proc.kill()
        self.proc.wait(timeout=START_TIMEOUT)


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    if not ready:
        raise AssertionError(f"holder {proc.pid} printed nothing within {timeout}s")
    line = proc.stdout.readline()
    if not line:
        err = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"holder {proc.pid} exited before reporting:\n{err}")
    return line


def _handles(pgdata: Path) -> list[int]:
    return list(json.loads((pgdata / ".handle_pids.json").read_text()))


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def _server_stops(pgdata: Path, timeout: float = STOP_TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not (pgdata / "postmaster.pid").exists():
            return True
        time.sleep(0.05)
    return not (pgdata / "postmaster.pid").exists()


def _query(url: str) -> int:
    with psycopg.connect(url, connect_timeout=5) as conn:
        row = conn.execute("SELECT 6 * 7").fetchone()
        assert row is not None
        return int(row[0])


@pytest.fixture
def pgdata(tmp_path: Path) -> Path:
    return tmp_path / "pg"


@pytest.fixture
def start_holder(pgdata: Path) -> Iterator[Callable[[], Holder]]:
    started: list[subprocess.Popen[str]] = []

    def start() -> Holder:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("DATABASE_URL", None)
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(pgdata)],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return Holder(proc, json.loads(_read_line(proc, START_TIMEOUT)))

    yield start

    # Teardown: end our holders, then stop the server if a failed test left it running.
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=START_TIMEOUT)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    pid = _postmaster_pid(pgdata)
    if pid is not None and psutil.pid_exists(pid):
        os.kill(pid, signal.SIGINT)  # fast shutdown
        _server_stops(pgdata, timeout=10)


def test_a_second_process_attaches_to_the_running_server_instead_of_starting_another(
    pgdata: Path, start_holder: Callable[[], Holder]
) -> None:
    first = start_holder()
    second = start_holder()

    assert first.info["answer"] == second.info["answer"] == 42
    assert second.info["postmaster_pid"] == first.info["postmaster_pid"]
    assert second.info["started"] == first.info["started"]
    assert second.info["url"] == first.info["url"]
    assert Path(second.info["data_directory"]) == pgdata.resolve()
    assert sorted(_handles(pgdata)) == sorted([first.info["pid"], second.info["pid"]])
    assert _query(first.info["url"]) == 42


def test_the_server_runs_until_the_last_attached_process_exits(
    pgdata: Path, start_holder: Callable[[], Holder]
) -> None:
    first = start_holder()
    second = start_holder()
    postmaster = first.info["postmaster_pid"]

    first.release()
    # The second process still holds the server: same server, still answering.
    assert _postmaster_pid(pgdata) == postmaster
    assert _query(second.info["url"]) == 42
    assert _handles(pgdata) == [second.info["pid"]]

    second.release()
    assert _server_stops(pgdata), "the server outlived the last process attached to it"
    assert _handles(pgdata) == []


def test_a_crashed_process_left_in_the_handle_list_is_pruned_and_does_not_keep_the_server_alive(
    pgdata: Path, start_holder: Callable[[], Holder]
) -> None:
    crashed = start_holder()
    crashed.crash()
    # The crash ran no cleanup: its dead pid is still registered and the server still runs.
    assert _handles(pgdata) == [crashed.info["pid"]]
    assert _postmaster_pid(pgdata) == crashed.info["postmaster_pid"]

    survivor = start_holder()
    assert survivor.info["postmaster_pid"] == crashed.info["postmaster_pid"]
    assert _handles(pgdata) == [survivor.info["pid"]]

    survivor.release()
    assert _server_stops(pgdata), "a dead pid in .handle_pids.json kept the server alive"


def test_a_process_that_crashes_while_another_is_attached_does_not_keep_the_server_alive(
    pgdata: Path, start_holder: Callable[[], Holder]
) -> None:
    survivor = start_holder()
    crashed = start_holder()
    crashed.crash()

    survivor.release()
    assert _server_stops(pgdata), "the server outlived every live process attached to it"
