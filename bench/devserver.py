"""The product's server for the benchmarks that talk to it over HTTP (mcp, otlp, live).

``DevServer`` runs ``manage.py serve --no-seed --no-sweeper`` (daphne, as ``make run`` serves)
in a subprocess of its own session, so Ctrl-C reaches only the bench, which then stops the
server in order; ``stop`` is idempotent and also runs at exit. The server's data directory and
log live in a temporary directory that goes with it.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parent.parent
STARTUP_SECONDS = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class DevServer:
    def __init__(
        self,
        name: str,
        database_url: str,
        *,
        env: Mapping[str, str] | None = None,
        profile: Path | None = None,
    ) -> None:
        """Start the server; ``env`` adds variables, ``profile`` runs it under cProfile."""
        self.port = free_port()
        self.tmp = tempfile.TemporaryDirectory(prefix=f"bench-{name}-")
        self.log = Path(self.tmp.name) / "server.log"
        environment = {
            **os.environ,
            "DATABASE_URL": database_url,
            "SWITCHBOARD_DATA_DIR": self.tmp.name,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        profiler = ["-m", "cProfile", "-o", str(profile.resolve())] if profile else []
        command = [
            sys.executable,
            *profiler,
            str(ROOT / "manage.py"),
            *("serve", "--no-seed", "--no-sweeper", "--host", "127.0.0.1"),
            *("--port", str(self.port)),
        ]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603 (our own command line)
                command,
                cwd=ROOT,
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        atexit.register(self.stop)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def wait_ready(self) -> None:
        """Wait until ``/healthz`` answers 200; raise with the log's tail if it never does."""
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited:\n{self.tail()}")
            try:
                if httpx2.get(f"{self.base}/healthz", timeout=1).status_code == 200:
                    return
            except httpx2.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(
            f"the server did not answer /healthz in {STARTUP_SECONDS} s:\n{self.tail()}"
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            # Twisted stops the reactor on SIGTERM; the process then exits normally (and
            # cProfile, if any, writes its file).
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.tmp.cleanup()
