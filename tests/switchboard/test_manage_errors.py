"""A manage.py command that cannot use the database says so in one line, with what to set.

Real processes (the venv's interpreter running manage.py), as a person at a terminal runs them;
none of them reaches the test database.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from psycopg import sql

from switchboard import embedded

REPO = Path(__file__).resolve().parents[2]
COMMAND = ("enqueue", "--endpoint", "demo-agent", "--queue", "ci-failures", "--title", "x")


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SWITCHBOARD_TESTING"}
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env={**clean, "DJANGO_SETTINGS_MODULE": "switchboard.settings", **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("manage.py: "), done.stderr
    return lines[0]


def test_a_database_that_does_not_answer_is_one_line_naming_it(tmp_path: Path) -> None:
    url = "postgresql://someone:hunter2@127.0.0.1:1/nowhere"
    line = one_line(manage({"DATABASE_URL": url, "SWITCHBOARD_DATA_DIR": str(tmp_path)}, *COMMAND))
    assert "cannot reach the database postgresql://someone:***@127.0.0.1:1/nowhere" in line
    assert "hunter2" not in line
    assert "check DATABASE_URL" in line


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ({"DEBUG": "maybe"}, "DEBUG must be a boolean"),
        ({"EMAIL_URL": "foo://x"}, "EMAIL_URL: unknown scheme 'foo'"),
    ],
)
def test_a_setting_that_cannot_be_read_is_one_line_naming_it(
    tmp_path: Path, setting: dict[str, str], said: str
) -> None:
    for args in (("check",), COMMAND):
        line = one_line(manage({**setting, "SWITCHBOARD_DATA_DIR": str(tmp_path)}, *args))
        assert line.startswith("manage.py: a setting cannot be read: ") and said in line


def test_a_database_without_tables_says_to_migrate(tmp_path: Path) -> None:
    embedded.ensure_running()
    db = settings.DATABASES["default"]
    name = f"{db['NAME']}_nomigrate"[:63]
    admin = {"dbname": "postgres", "user": db["USER"] or "postgres", "host": db["HOST"] or ""}
    if db["PORT"]:
        admin["port"] = str(db["PORT"])
    with psycopg.connect(**admin, autocommit=True) as conn:  # type: ignore[arg-type]
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        host = db["HOST"] or "127.0.0.1"
        url = (
            f"postgresql://{admin['user']}@/{name}?host={host}&port={db['PORT'] or 5432}"
            if host.startswith("/")
            else f"postgresql://{admin['user']}@{host}:{db['PORT'] or 5432}/{name}"
        )
        done = manage({"DATABASE_URL": url, "SWITCHBOARD_DATA_DIR": str(tmp_path)}, *COMMAND)
        line = one_line(done)
        assert "has no Switchboard tables" in line and "manage.py migrate" in line
        # --traceback shows the whole error instead.
        done = manage(
            {"DATABASE_URL": url, "SWITCHBOARD_DATA_DIR": str(tmp_path)}, *COMMAND, "--traceback"
        )
        assert done.returncode == 1 and "Traceback" in done.stderr
    finally:
        with psycopg.connect(**admin, autocommit=True) as conn:  # type: ignore[arg-type]
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def test_beside_a_server_on_another_database_a_command_says_what_to_set(tmp_path: Path) -> None:
    """The server of this checkout serves DATABASE_URL; a command without it starts no second,
    empty embedded database."""
    (tmp_path / "server.json").write_text(
        json.dumps(
            {"pid": os.getpid(), "database": "postgresql://app@db:5432/sb", "embedded": False}
        )
    )
    line = one_line(manage({"SWITCHBOARD_DATA_DIR": str(tmp_path)}, *COMMAND))
    assert f"the server running in this checkout (pid {os.getpid()})" in line
    assert "postgresql://app@db:5432/sb" in line and "set DATABASE_URL" in line
    assert not (tmp_path / "postgres").exists()


def test_the_server_note_hides_the_password_and_is_ignored_once_its_process_is_gone(
    tmp_path: Path,
) -> None:
    embedded.record_server(tmp_path, "postgres://app:s3cret@db:5432/sb", is_embedded=False)
    note = embedded.running_server(tmp_path)
    assert note == {
        "pid": os.getpid(),
        "database": "postgres://app:***@db:5432/sb",
        "embedded": False,
    }
    assert "s3cret" not in (tmp_path / "server.json").read_text()
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    (tmp_path / "server.json").write_text(json.dumps({**note, "pid": int(gone.stdout)}))
    assert embedded.running_server(tmp_path) is None


@pytest.mark.parametrize("url", ["postgres://u@h/db", "postgres://u:p%40ss@h:5/db?sslmode=require"])
def test_safe_url_leaves_out_only_the_password(url: str) -> None:
    assert "p%40ss" not in embedded.safe_url(url)
    assert embedded.safe_url(url).startswith("postgres://u")


def test_a_second_servers_note_leaves_the_first_ones(tmp_path: Path) -> None:
    """Commands in the checkout keep following the server that was there first."""
    first = {"pid": os.getpid(), "database": "postgres://a@h/first", "embedded": False}
    (tmp_path / "server.json").write_text(json.dumps(first))
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from switchboard import embedded;"
            " embedded.record_server(Path(sys.argv[1]), 'postgres://b@h/second',"
            " is_embedded=False)",
            str(tmp_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "another server" in child.stderr
    assert embedded.running_server(tmp_path) == first


def test_serve_on_a_busy_port_says_so_in_one_line_and_notes_nothing(tmp_path: Path) -> None:
    """Before: it noted itself, failed in daphne, and took the running server's note with it."""
    first = {"pid": os.getpid(), "database": "postgres://a@h/first", "embedded": False}
    (tmp_path / "server.json").write_text(json.dumps(first))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = manage(
            {"SWITCHBOARD_DATA_DIR": str(tmp_path), "DATABASE_URL": settings.DATABASE_URL},
            "serve",
            "--port",
            str(port),
            "--no-seed",
            "--no-sweeper",
        )
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    assert embedded.running_server(tmp_path) == first


def test_an_argument_that_is_not_utf8_is_one_line_naming_its_bytes() -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "todos", "cancel", "td_x", "--reason", b"a\xff"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert one_line(done) == "manage.py: an argument is not UTF-8 text: b'a\\xff'"
