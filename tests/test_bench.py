"""The benchmarks still start: at import they splice the product's SQL fragments into their
baselines (bench/sql/), and the ablations rewrite the product's statements, stopping with a
message if one changed shape (bench/ablations/lifecycle_ablations.py ``_rewrite``). They are not
run here (they TRUNCATE their database); ``--help`` imports them. ``bench/live.py`` touches only
rows of its own, so its smoke run (``--quick``) runs here, on the test database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "script",
    [
        "bench/lifecycle.py",
        "bench/mcp.py",
        "bench/mcpwire.py",
        "bench/otlp.py",
        "bench/ablations/lifecycle_ablations.py",
        "bench/ablations/search_table.py",
        "bench/ablations/span_store.py",
        "bench/activity.py",
        "bench/live.py",
        "bench/claims.py",
        "bench/overview.py",
        "bench/soak.py",
        "bench/span_retention.py",
    ],
)
def test_the_benchmark_imports_and_parses_its_options(script: str) -> None:
    done = subprocess.run(
        [sys.executable, script, "--help"],
        cwd=ROOT,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "usage:" in done.stdout


@pytest.mark.django_db(transaction=True)
def test_the_live_benchmark_runs_quick_on_the_test_database(daphne_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "bench/live.py", "--quick"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": daphne_env["DATABASE_URL"]},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "budget: p95 <= 500 ms: met" in done.stdout
