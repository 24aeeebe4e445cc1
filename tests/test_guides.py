"""The README and every guide run as pasted, in reading order, on one `make run`.

A reader starts `make run`, pastes what it printed, and follows the README and then the guides in
the order docs/README.md lists them, in one terminal, on one server. So does this module: one
`manage.py serve` (what `make run` runs) on a fresh database of its own, which it migrates and
seeds; the demo's credentials and the `export SWITCHBOARD_URL=…` line are read from what it
printed, as a reader copies them. Then every file's runnable blocks run in document order
(tests/guides.py says which are), one test per file, the files in reading order, all against that
one server and database (docs/README.md, "Code blocks"):

- the shell blocks as one terminal: each runs in its own bash, but a state file carries the
  variables, functions and working directory each leaves to the next, in its file and the next;
- each Python block on its own, with the variables the shell blocks before it exported.

A file picked alone (``-k agents``) first runs the files before it, so it meets the state a
reader would. Nothing is substituted in the blocks: they read the server's address from
``$SWITCHBOARD_URL``.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import httpx2
import psycopg
import pytest
from django.conf import settings
from psycopg import sql

from switchboard import embedded
from tests.guides import DEMO_BASE, ROOT, Block, blocks, guide_files, reading_order
from tests.live import _free_port

STARTUP_SECONDS = 180  # migrating a fresh database, seeding the demo, starting daphne
BLOCK_SECONDS = 180

# Before a shell block: the terminal so far (the state file, if any), then a trap that writes
# what the block leaves behind back to it, whether the block succeeds or not, as a terminal
# keeps it. Saved: the directory; every exported variable; every other variable the terminal
# did not start with (so bash's own stay out); the functions. Read-only variables stay out.
SHELL_PRELUDE = r"""
__sb_started=" $(compgen -v | tr '\n' ' ') "
if [[ -f "$__sb_state" ]]; then source "$__sb_state"; fi
__sb_save() {
  local __sb_name __sb_decl __sb_flags
  {
    printf 'cd -- %q\n' "$PWD"
    for __sb_name in $(compgen -v); do
      case "$__sb_name" in __sb_*|BASH*|FUNCNAME|PIPESTATUS|_) continue ;; esac
      __sb_decl=$(declare -p "$__sb_name" 2>/dev/null) || continue
      __sb_flags=${__sb_decl#declare -}
      __sb_flags=${__sb_flags%% *}
      if [[ $__sb_flags == *r* ]]; then continue; fi
      if [[ $__sb_flags == *x* || $__sb_started != *" $__sb_name "* ]]; then
        printf '%s\n' "$__sb_decl"
      fi
    done
    declare -f
  } > "$__sb_state.new" && mv -f -- "$__sb_state.new" "$__sb_state"
}
trap __sb_save EXIT
set -eo pipefail
"""
# A Python block runs beside the terminal: with what it exported, in its directory.
PYTHON_BESIDE = 'if [[ -f "$__sb_state" ]]; then source "$__sb_state"; fi; exec "$0" -c "$1"'


@dataclass
class Terminal:
    """The one terminal the files' blocks run in, as a reader's: its environment (what a reader
    exported from `make run`'s banner) and the state file that carries it from block to block."""

    env: dict[str, str]
    state: Path
    cwd: Path = ROOT

    def run(self, block: Block) -> str:
        """Run ``block`` as a reader pastes it; return its output, or fail naming it."""
        if DEMO_BASE in block.code:
            pytest.fail(
                f"{block.where} writes out {DEMO_BASE}: read the address from $SWITCHBOARD_URL"
                ' (os.environ["SWITCHBOARD_URL"] in Python; docs/README.md, "Code blocks")',
                pytrace=False,
            )
        if block.language == "python":
            argv = ["bash", "-c", PYTHON_BESIDE, sys.executable, block.code]
        else:
            argv = ["bash", "-c", f"{SHELL_PRELUDE}\n{block.code}"]
        done = subprocess.run(
            argv,
            cwd=self.cwd,
            env={**self.env, "__sb_state": str(self.state)},
            capture_output=True,
            text=True,
            timeout=BLOCK_SECONDS,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(
                f"the code block at {block.where} failed (exit {done.returncode})\n"
                f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}",
                pytrace=False,
            )
        return done.stdout + done.stderr


def run_blocks(found: list[Block], terminal: Terminal) -> str:
    """Run the runnable blocks of one file in order; return what they printed."""
    return "".join(terminal.run(block) for block in found if block.runnable)


# --- the server ------------------------------------------------------------------------------


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


def _printed(banner: str) -> dict[str, str]:
    """What a reader exports from `make run`'s banner (README's three `export` lines): the
    address, the agent key and the webhook secret. The banner prints the operator's password
    too, for the Board's login, but no block may rely on it (docs/README.md, "Code blocks")."""
    found = {
        "SWITCHBOARD_URL": re.search(r"^\s*export SWITCHBOARD_URL=(\S+)", banner, re.M),
        "SWITCHBOARD_KEY": re.search(r"^\s*Agent key\s+(sbk_\S+)", banner, re.M),
        "SWITCHBOARD_WEBHOOK_SECRET": re.search(r"^\s*Webhook secret\s+(\S+)", banner, re.M),
    }
    missing = [name for name, match in found.items() if match is None]
    assert not missing, f"make run's banner has no {missing}: {banner}"
    assert re.search(r"^\s*Password\s+\S+", banner, re.M), f"no password printed: {banner}"
    return {name: match[1] for name, match in found.items() if match is not None}


@dataclass
class FirstHour:
    """The one `make run` the files run against, the terminal beside it, what has run."""

    base: str
    database_url: str
    terminal: Terminal
    ran: set[Path] = field(default_factory=set)


@pytest.fixture(scope="module")
def first_hour(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirstHour]:
    """`manage.py serve` on a fresh database, which it migrates and seeds as `make run` does."""
    embedded.ensure_running()
    name = f"{settings.DATABASES['default']['NAME']}_guides_{secrets.token_hex(4)}"[:63]
    _admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    tmp = tmp_path_factory.mktemp("guides")
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": _url(name),
        "SECRET_KEY": secrets.token_urlsafe(48),
        "SWITCHBOARD_DATA_DIR": str(tmp / "data"),
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": "switchboard.settings",
        "HOST": "127.0.0.1",
        "PORT": str(port),
    }
    for var in ("DJANGO_ALLOW_ASYNC_UNSAFE", "SWITCHBOARD_TESTING", "SWITCHBOARD_DEMO_PASSWORD"):
        env.pop(var, None)
    log = tmp / "serve.log"
    base = f"http://127.0.0.1:{port}"
    try:
        with log.open("wb") as out:
            server = subprocess.Popen(
                [sys.executable, "manage.py", "serve"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_until_ready(server, base, log)
            printed = _printed(log.read_text())
            assert printed["SWITCHBOARD_URL"] == base, printed["SWITCHBOARD_URL"]
            # serve noted its database and address for the commands beside it.
            note = json.loads((tmp / "data" / "server.json").read_text())
            assert (note["pid"], note["embedded"], note["url"]) == (server.pid, False, base)
            # A reader's terminal: without the HOST and PORT the server was started with, so
            # what a command prints about the server comes from the server's note.
            beside = {k: v for k, v in env.items() if k not in ("HOST", "PORT")}
            terminal = Terminal({**beside, **printed}, tmp / "terminal.sh")
            yield FirstHour(base, env["DATABASE_URL"], terminal)
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
    finally:
        _admin(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _wait_until_ready(server: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"serve exited: {log.read_text()[-3000:]}")
        try:
            if httpx2.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"serve did not start: {log.read_text()[-3000:]}")
        time.sleep(0.2)


# --- the files -------------------------------------------------------------------------------

ORDER = reading_order()
RUNNABLE_FILES = [p for p in ORDER if any(b.runnable for b in blocks(p))]


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", guide_files(), ids=_name)
def test_every_block_says_what_it_is(path: Path) -> None:
    unmarked = [b.where for b in blocks(path) if not b.language]
    assert not unmarked, f"blocks without an info string (docs/README.md, Code blocks): {unmarked}"


def test_the_reading_order_is_the_readme_then_every_guide_once() -> None:
    assert ORDER[0] == ROOT / "README.md"
    assert len(ORDER) == len(set(ORDER)), [_name(p) for p in ORDER]
    assert set(ORDER) == set(guide_files()), (
        "docs/README.md's reading order and the guides differ: "
        f"{sorted(_name(p) for p in set(ORDER) ^ set(guide_files()))}"
    )


def test_only_the_last_file_reissues_the_demos_credentials() -> None:
    """`seed_demo --reissue` revokes the key and secret the files after it use."""
    reissuing = [
        _name(path)
        for path in ORDER
        if any(b.runnable and "seed_demo --reissue" in b.code for b in blocks(path))
    ]
    assert reissuing in ([], [_name(ORDER[-1])]), reissuing


# What a file's blocks must have done beyond exiting 0, checked afterwards on the database
# they share and on what they printed.
def _each_delivery_made_one_todo(hour: FirstHour, printed: str) -> None:
    """The guide's delivery to its own source and the one to demo-ci became a todo each: no
    rule of another file's (the README's `github`) or of the demo's took them twice."""
    with psycopg.connect(hour.database_url) as conn:
        made = conn.execute(
            "SELECT s.slug, e.disposition, count(t.id) FROM events e"
            " JOIN sources s ON s.id = e.source_id LEFT JOIN todos t ON t.event_id = e.id"
            " WHERE s.slug IN ('github-guide', 'demo-ci') GROUP BY e.id, s.slug, e.disposition"
            " ORDER BY e.id"
        ).fetchall()
    assert made == [("github-guide", "routed", 1), ("demo-ci", "routed", 1)], made


def _agents_drained(hour: FirstHour, printed: str) -> None:
    """The drain example completed what it claimed (as the demo-agent endpoint, `endpoint:<its
    id>`; the demo's own history is `demo-bot`'s) and left nothing pending on the demo queue:
    the demo's todos, the README's and the webhook guide's."""
    with psycopg.connect(hour.database_url) as conn:
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
        from_hooks = conn.execute(
            "SELECT t.state FROM todos t JOIN events e ON e.id = t.event_id"
            " JOIN sources s ON s.id = e.source_id WHERE s.slug = 'github-guide'"
        ).fetchall()
    assert set(outcomes) == {"completed"}, outcomes
    assert pending == (0,)
    assert from_hooks == [("completed",)], from_hooks


def _reissued_for_this_server(hour: FirstHour, printed: str) -> None:
    """`seed_demo --reissue`, run beside the server, printed that server's URLs."""
    assert f"Board login     {hour.base}/login/" in printed, printed


AFTER: dict[str, Callable[[FirstHour, str], None]] = {
    "webhooks.md": _each_delivery_made_one_todo,
    "agents.md": _agents_drained,
    "operations.md": _reissued_for_this_server,
}


def _run_file(hour: FirstHour, path: Path) -> None:
    hour.ran.add(path)
    printed = run_blocks(blocks(path), hour.terminal)
    if path.name in AFTER:
        AFTER[path.name](hour, printed)


@pytest.mark.parametrize("path", RUNNABLE_FILES, ids=_name)
def test_blocks_run_as_pasted_in_reading_order(first_hour: FirstHour, path: Path) -> None:
    for before in RUNNABLE_FILES[: RUNNABLE_FILES.index(path)]:
        if before not in first_hour.ran:  # picked alone: catch up as a reader would have
            _run_file(first_hour, before)
    _run_file(first_hour, path)


def test_a_failing_block_fails_the_test_and_the_terminal_carries_on(tmp_path: Path) -> None:
    guide = tmp_path / "guide.md"
    guide.write_text(
        "# A guide\n\n```sh\nexport SEEN=1; LOCAL=2; cd /\n```\n\n```sh norun\nexit 3\n```\n\n"
        "```text\nexit 4\n```\n\n- a step:\n\n   ```sh\n   false\n   ```\n\n"
        '```python\nimport os; assert os.environ["SEEN"] == "1" and os.getcwd() == "/"\n```\n\n'
        '```sh\ntest "$SEEN$LOCAL" = 12 && test "$PWD" = /\n```\n'
    )
    found = blocks(guide)
    assert [(b.language, b.norun, b.runnable) for b in found] == [
        ("sh", False, True),
        ("sh", True, False),
        ("text", False, False),
        ("sh", False, True),
        ("python", False, True),
        ("sh", False, True),
    ]
    assert found[3].code == "false\n"
    terminal = Terminal(dict(os.environ), tmp_path / "terminal.sh", cwd=tmp_path)
    with pytest.raises(pytest.fail.Exception, match=re.escape(f"{found[3].where} failed (exit 1)")):
        run_blocks(found[:4], terminal)
    # What the first block left is there for the Python block and the last shell block, the
    # exported variable in Python's environment, the other one only in the shell.
    run_blocks(found[4:], terminal)
    terminal.run(Block(guide, 99, "python", False, 'import os; assert "LOCAL" not in os.environ'))
    written = Block(guide, 1, "sh", False, f"curl -fsS {DEMO_BASE}/healthz\n")
    with pytest.raises(pytest.fail.Exception, match="SWITCHBOARD_URL"):
        terminal.run(written)


def _drain_says(tmp_path: Path, url: str, key: str) -> str:
    """What the agents guide's drain script says on stderr, run against ``url`` with ``key``,
    when it fails (it must: exit 1)."""
    [drain] = [
        b
        for b in blocks(ROOT / "docs" / "guides" / "agents.md")
        if b.runnable and b.language == "python" and "def drain" in b.code
    ]
    terminal = Terminal(
        {**os.environ, "SWITCHBOARD_URL": url, "SWITCHBOARD_KEY": key}, tmp_path / "t.sh"
    )

    with pytest.raises(pytest.fail.Exception) as failed:
        terminal.run(drain)

    assert "(exit 1)" in str(failed.value)
    return str(failed.value).split("--- stderr\n", 1)[1].strip()


def test_the_agents_drain_says_in_one_line_when_nothing_answers(tmp_path: Path) -> None:
    """A reader whose server runs on another port gets one line naming the address, not the
    SDK's exception group (docs/guides/agents.md, "The Python SDK")."""
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there

    said = _drain_says(tmp_path, url, "sbk_x")

    assert said == f"cannot reach {url}: All connection attempts failed"


def test_the_agents_drain_says_in_one_line_when_the_key_is_refused(
    first_hour: FirstHour, tmp_path: Path
) -> None:
    """A wrong or stale key (the old one after `seed_demo --reissue`) is a 401, which the SDK
    raises as an MCPError inside its task groups: one line too, with the server's reason."""
    said = _drain_says(tmp_path, first_hour.base, "sbk_" + "x" * 43)

    assert said == (
        f"{first_hour.base}/mcp/demo-agent refused:"
        " Unauthorized: missing or invalid bearer token for this endpoint"
    )
