"""Process configuration: the typed environment readers, the generated SECRET_KEY, and the
refusal of any database but PostgreSQL (SYSTEM.md §1, §9)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from switchboard import secret_key
from switchboard.lib.env import env_bool, env_int, env_list, env_str

REPO = Path(__file__).resolve().parents[2]
VAR = "SWITCHBOARD_TEST_VARIABLE"


# --- env_bool ---------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", " yes ", "on", "On"])
def test_env_bool_reads_the_true_spellings(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(VAR, raw)
    assert env_bool(VAR, False) is True


@pytest.mark.parametrize("raw", ["0", "false", "FALSE", " no ", "off", ""])
def test_env_bool_reads_the_false_spellings(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(VAR, raw)
    assert env_bool(VAR, True) is False


@pytest.mark.parametrize("default", [True, False])
def test_env_bool_takes_the_default_when_unset(
    monkeypatch: pytest.MonkeyPatch, default: bool
) -> None:
    monkeypatch.delenv(VAR, raising=False)
    assert env_bool(VAR, default) is default


@pytest.mark.parametrize("raw", ["maybe", "2", "enabled", "ture"])
def test_env_bool_refuses_other_values_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(VAR, raw)
    with pytest.raises(ImproperlyConfigured, match=VAR) as excinfo:
        env_bool(VAR, False)
    assert repr(raw) in str(excinfo.value)


# --- env_int ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [("42", 42), (" 7 ", 7), ("-3", -3), ("0", 0)])
def test_env_int_reads_an_integer(monkeypatch: pytest.MonkeyPatch, raw: str, expected: int) -> None:
    monkeypatch.setenv(VAR, raw)
    assert env_int(VAR, 99) == expected


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_env_int_takes_the_default_when_unset_or_blank(
    monkeypatch: pytest.MonkeyPatch, raw: str | None
) -> None:
    if raw is None:
        monkeypatch.delenv(VAR, raising=False)
    else:
        monkeypatch.setenv(VAR, raw)
    assert env_int(VAR, 99) == 99


@pytest.mark.parametrize("raw", ["4.5", "ten", "1e3", "0x10", "5s"])
def test_env_int_refuses_a_non_integer_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raw: str
) -> None:
    monkeypatch.setenv(VAR, raw)
    with pytest.raises(ImproperlyConfigured, match=f"{VAR} must be an integer"):
        env_int(VAR, 99)


def test_env_int_refuses_a_value_below_its_minimum_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VAR, "0")
    with pytest.raises(ImproperlyConfigured, match=f"{VAR} must be at least 1, not 0"):
        env_int(VAR, 5, minimum=1)


def test_env_int_accepts_its_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, "1")
    assert env_int(VAR, 5, minimum=1) == 1


# --- env_list and env_str ---------------------------------------------------------------------


def test_env_list_splits_on_commas_and_drops_blanks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(VAR, " a.example , b.example,,  ,c ")
    assert env_list(VAR, ["default"]) == ["a.example", "b.example", "c"]


def test_env_list_set_to_empty_is_an_empty_list_not_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(VAR, "")
    assert env_list(VAR, ["default"]) == []


def test_env_list_returns_a_copy_of_the_default_when_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(VAR, raising=False)
    default = ["a", "b"]
    value = env_list(VAR, default)
    assert value == ["a", "b"]
    value.append("c")
    assert default == ["a", "b"]


def test_env_str_returns_the_raw_value_or_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(VAR, raising=False)
    assert env_str(VAR, "fallback") == "fallback"
    monkeypatch.setenv(VAR, " spaced ")
    assert env_str(VAR, "fallback") == " spaced "


# --- secret_key -------------------------------------------------------------------------------


def test_load_or_create_creates_a_private_key_file_once(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "secret_key"
    key = secret_key.load_or_create(path)

    assert len(key) >= 50
    assert path.read_text().strip() == key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secret_key.load_or_create(path) == key


def test_load_or_create_keeps_an_existing_key(tmp_path: Path) -> None:
    path = tmp_path / "secret_key"
    path.write_text("an-operator-chose-this-key\n")
    assert secret_key.load_or_create(path) == "an-operator-chose-this-key"
    assert path.read_text() == "an-operator-chose-this-key\n"


def test_load_or_create_gives_concurrent_callers_one_key(tmp_path: Path) -> None:
    path = tmp_path / "secret_key"
    barrier = threading.Barrier(8)
    keys: list[str] = []

    def start() -> None:
        barrier.wait()
        keys.append(secret_key.load_or_create(path))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert len(keys) == 8
    assert set(keys) == {path.read_text().strip()}


# --- settings at import -----------------------------------------------------------------------


def _import_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """Import the settings module in a fresh interpreter with ``env`` over a clean environment.

    DATABASE_URL is always given by the caller: left unset it would start an embedded server.
    """
    assert "DATABASE_URL" in env
    base = {k: v for k, v in os.environ.items() if not k.startswith("SWITCHBOARD_")}
    full = {
        **base,
        "DJANGO_SETTINGS_MODULE": "switchboard.settings",
        "SECRET_KEY": "test-only-secret",
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); print('configured')"],
        cwd=REPO,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_settings_accept_a_postgresql_database_url(tmp_path: Path) -> None:
    # The control for the refusals below: the same import succeeds with a PostgreSQL URL
    # (settings never connect, so a closed port is fine).
    done = _import_settings(tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:1/x")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "configured"


@pytest.mark.parametrize(
    "url", ["sqlite:///x", "sqlite://:memory:", "mysql://user:pw@127.0.0.1/switchboard"]
)
def test_settings_refuse_a_database_url_that_is_not_postgresql(tmp_path: Path, url: str) -> None:
    done = _import_settings(tmp_path, DATABASE_URL=url)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr
    assert "DATABASE_URL must name a PostgreSQL database" in done.stderr
    assert "configured" not in done.stdout


@pytest.mark.parametrize(
    ("variable", "raw", "message"),
    [
        ("SWITCHBOARD_OTLP", "maybe", "SWITCHBOARD_OTLP must be a boolean"),
        ("SWITCHBOARD_SWEEP_INTERVAL_SECONDS", "0", "SWITCHBOARD_SWEEP_INTERVAL_SECONDS must be"),
        ("SWITCHBOARD_MAX_BODY_BYTES", "1MB", "SWITCHBOARD_MAX_BODY_BYTES must be an integer"),
    ],
)
def test_settings_refuse_a_malformed_switch_at_import(
    tmp_path: Path, variable: str, raw: str, message: str
) -> None:
    done = _import_settings(
        tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:1/x", **{variable: raw}
    )
    assert done.returncode != 0
    assert message in done.stderr


# --- no SQLite anywhere -----------------------------------------------------------------------

# Tool output and environments, not the project's files.
_SKIPPED_DIRS = {
    ".venv",
    ".git",
    ".data",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "node_modules",
}
# Joined at run time so that this file (and its bytecode) never holds the needle itself.
_SQLITE_BACKEND = ".".join(["backends", "sqlite3"])


def test_no_file_in_the_repository_configures_the_sqlite3_backend() -> None:
    offenders: list[str] = []
    scanned = 0
    for root, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_DIRS]
        for name in files:
            path = Path(root) / name
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if b"\0" in data:
                continue  # binary
            scanned += 1
            if _SQLITE_BACKEND.encode() in data:
                offenders.append(str(path.relative_to(REPO)))

    # The walk really read the project (settings among it), so an empty result means something.
    assert scanned > 50
    assert (REPO / "switchboard" / "settings.py").is_file()
    assert offenders == []
