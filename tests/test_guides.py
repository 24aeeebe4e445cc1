"""Every code block in the README and the guides runs as pasted against `make run`'s demo.

The server is `manage.py serve` (what `make run` runs) on a database of its own, fresh: it
migrates, seeds the demo and prints the demo's credentials, which the test exports as the guides
tell a reader to (docs/README.md, "Code blocks"). Then each file's runnable blocks run
(tests/guides.py says which are); the only substitutions are those the convention documents.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx2
import psycopg
import pytest
from django.conf import settings
from psycopg import sql

from switchboard import embedded
from tests.guides import DEMO_BASE, ROOT, Block, blocks, guide_files
from tests.live import _free_port

STARTUP_SECONDS = 120
BLOCK_SECONDS = 180


@dataclass(frozen=True)
class Demo:
    """A database `make run` migrated and seeded (the template of each file's copy), the
    environment the guides' commands run in, and the credentials its seeding printed."""

    name: str
    env: dict[str, str]
    tmp: Path


def _conninfo(database: str) -> dict[str, str]:
    db = settings.DATABASES["default"]
    info = {"dbname": database, "user": db["USER"] or "postgres", "host": db["HOST"] or ""}
    if db["PORT"]:
        info["port"] = str(db["PORT"])
    if db["PASSWORD"]:
        info["password"] = db["PASSWORD"]
    return info


def _url(database: str) -> str:
    info = _conninfo(database)
    password = f":{quote(info['password'])}" if "password" in info else ""
    host = quote(info["host"] or "127.0.0.1", safe="")
    port = info.get("port", "5432")
    return f"postgres://{quote(info['user'])}{password}@{host}:{port}/{database}"


def _admin(statement: sql.Composable) -> None:
    with psycopg.connect(**_conninfo("postgres"), autocommit=True) as conn:  # type: ignore[arg-type]
        conn.execute(statement)


def _credentials(out: str) -> dict[str, str]:
    """The demo's credentials from seed_demo's summary, as the guides name their variables."""
    found = {
        "SWITCHBOARD_DEMO_PASSWORD": re.search(r"^\s*Password\s+(\S+)", out, re.M),
        "SWITCHBOARD_KEY": re.search(r"^\s*Agent key\s+(sbk_\S+)", out, re.M),
        "SWITCHBOARD_WEBHOOK_SECRET": re.search(r"^\s*Webhook secret\s+(\S+)", out, re.M),
    }
    missing = [name for name, match in found.items() if match is None]
    assert not missing, f"seed_demo printed no {missing}: {out}"
    return {name: match[1] for name, match in found.items() if match is not None}


def _manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=STARTUP_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """A fresh database migrated and seeded as `make run` does it, once for the module."""
    embedded.ensure_running()
    name = f"{settings.DATABASES['default']['NAME']}_guides_{secrets.token_hex(4)}"[:63]
    _admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    tmp = tmp_path_factory.mktemp("guides")
    env = {
        **os.environ,
        "DATABASE_URL": _url(name),
        "SECRET_KEY": secrets.token_urlsafe(48),
        "SWITCHBOARD_DATA_DIR": str(tmp / "data"),
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "switchboard.settings",
    }
    for var in ("DJANGO_ALLOW_ASYNC_UNSAFE", "SWITCHBOARD_TESTING", "SWITCHBOARD_DEMO_PASSWORD"):
        env.pop(var, None)
    try:
        _manage(env, "migrate", "--verbosity", "0")
        credentials = _credentials(_manage(env, "seed_demo"))
        yield Demo(name, {**env, **credentials}, tmp)
    finally:
        _drop(name)


def _drop(name: str) -> None:
    _admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def serving(demo: Demo, label: str) -> Iterator[tuple[str, dict[str, str]]]:
    """`manage.py serve` (what `make run` runs) on a copy of the seeded demo database; yield its
    address and the environment for the guides' commands."""
    name = f"{demo.name}_{label}"[:63]
    _admin(
        sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(demo.name)
        )
    )
    port = _free_port()
    env = {**demo.env, "DATABASE_URL": _url(name), "HOST": "127.0.0.1", "PORT": str(port)}
    log = demo.tmp / f"serve-{label}.log"
    base = f"http://127.0.0.1:{port}"
    try:
        with log.open("wb") as out:
            server = subprocess.Popen(
                [sys.executable, "manage.py", "serve", "--port", str(port)],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while True:
                if server.poll() is not None:
                    raise RuntimeError(f"serve exited: {log.read_text()[-3000:]}")
                try:
                    if httpx2.get(f"{base}/readyz", timeout=1).status_code == 200:
                        break
                except httpx2.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"serve did not start: {log.read_text()[-3000:]}")
                time.sleep(0.2)
            # serve noted its database for the commands beside it (manage.py reads the note).
            note = json.loads((Path(env["SWITCHBOARD_DATA_DIR"]) / "server.json").read_text())
            assert note["pid"] == server.pid and note["embedded"] is False, note
            yield base, env
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    finally:
        _drop(name)


def run_blocks(found: list[Block], base: str, env: dict[str, str], cwd: Path) -> None:
    """Run the runnable blocks of one file as a reader pastes them; fail naming the block."""
    shell = [b for b in found if b.runnable and b.language in {"sh", "bash"}]
    if shell:
        script = ["set -eo pipefail"]
        for block in shell:
            script.append(f"echo '>>> {block.where}' >&2")
            script.append(block.code.replace(DEMO_BASE, base))
        _run(["bash", "-c", "\n".join(script)], shell[0], env, cwd)
    for block in found:
        if block.runnable and block.language == "python":
            _run([sys.executable, "-c", block.code.replace(DEMO_BASE, base)], block, env, cwd)


def _run(argv: list[str], block: Block, env: dict[str, str], cwd: Path) -> None:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_SECONDS, check=False
    )
    if done.returncode != 0:
        pytest.fail(
            f"a code block failed (exit {done.returncode}); the last `>>>` names it, else "
            f"{block.where}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}",
            pytrace=False,
        )


@pytest.mark.parametrize("path", guide_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_says_what_it_is(path: Path) -> None:
    unmarked = [b.where for b in blocks(path) if not b.language]
    assert not unmarked, f"blocks without an info string (docs/README.md, Code blocks): {unmarked}"


# What a file's blocks must have done beyond exiting 0, checked on its database afterwards.
def _agents_drained(database_url: str) -> None:
    """The drain example completed what it claimed (as the demo-agent endpoint, `endpoint:<its
    id>`; the demo's own history is `demo-bot`'s) and left nothing pending on the demo queue."""
    with psycopg.connect(database_url) as conn:
        outcomes = dict(
            conn.execute(
                "SELECT coalesce(a.outcome, 'open'), count(*) FROM todo_attempts a"
                " JOIN endpoints e ON a.owner = 'endpoint:' || e.id"
                " WHERE e.slug = 'demo-agent' GROUP BY 1"
            ).fetchall()
        )
        pending = conn.execute(
            "SELECT count(*) FROM todos t JOIN endpoints e ON e.id = t.endpoint_id"
            " WHERE e.slug = 'demo-agent' AND t.queue = 'ci-failures' AND t.state = 'pending'"
        ).fetchone()
    assert set(outcomes) == {"completed"}, outcomes
    assert pending == (0,)


AFTER = {"agents.md": _agents_drained}

RUNNABLE_FILES = [p for p in guide_files() if any(b.runnable for b in blocks(p))]


@pytest.mark.parametrize("path", RUNNABLE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_blocks_run_as_pasted(demo: Demo, path: Path) -> None:
    label = re.sub(r"[^a-z0-9]+", "_", path.stem.lower())
    with serving(demo, label) as (base, env):
        run_blocks(blocks(path), base, env, ROOT)
        if path.name in AFTER:
            AFTER[path.name](env["DATABASE_URL"])


def test_a_failing_unmarked_block_fails_the_test(tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text(
        "# A guide\n\n```sh\ntrue\n```\n\n```sh norun\nexit 3\n```\n\n```text\nexit 4\n```\n\n"
        "- a step:\n\n   ```sh\n   false\n   ```\n"
    )
    found = blocks(guide)
    assert [(b.language, b.norun, b.runnable) for b in found] == [
        ("sh", False, True),
        ("sh", True, False),
        ("text", False, False),
        ("sh", False, True),
    ]
    assert found[3].code == "false\n"
    with pytest.raises(pytest.fail.Exception, match="exit 1"):
        run_blocks(found, DEMO_BASE, dict(os.environ), tmp_path)
    run_blocks(found[:3], DEMO_BASE, dict(os.environ), tmp_path)
