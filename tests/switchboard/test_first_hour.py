"""Small things a new operator meets in the first hour: the favicon, and `make run` installing
only what the product needs, from its lock."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from django.test import Client

REPO = Path(__file__).resolve().parents[2]


def test_the_favicon_is_linked_and_served_at_favicon_ico(client: Client) -> None:
    redirect = client.get("/favicon.ico")
    assert redirect.status_code == 301 and redirect["Location"] == "/static/favicon.svg"
    icon = client.get("/static/favicon.svg")
    assert icon.status_code == 200 and icon["Content-Type"].startswith("image/svg+xml")
    assert b"<svg" in b"".join(icon.streaming_content)  # type: ignore[attr-defined]
    login = client.get("/login/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in login


def _planned(target: str, tmp_path: Path) -> str:
    """What `make <target>` would run for a checkout whose virtual environment is new."""
    done = subprocess.run(
        ["make", "-n", target, f"VENV={tmp_path / 'venv'}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_run_installs_the_runtime_dependencies_and_make_test_the_dev_tools(
    tmp_path: Path,
) -> None:
    run = _planned("run", tmp_path)
    test = _planned("test", tmp_path)

    # The locked set, every file's hash checked, then the project without re-resolving.
    assert "install --quiet --require-hashes -r requirements.lock\n" in run
    assert "requirements-dev.lock" not in run
    assert "install --quiet --require-hashes -r requirements-dev.lock\n" in test
    for plan in (run, test):
        assert "install --quiet --no-deps .\n" in plan
        assert "install --quiet ." not in plan.replace("--no-deps .", "")
