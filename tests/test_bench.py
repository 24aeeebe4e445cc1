"""The benchmarks still start: at import they splice the product's SQL fragments into their
baselines (bench/sql/), and the ablations rewrite the product's statements, stopping with a
message if one changed shape (bench/ablations/lifecycle_ablations.py ``_rewrite``). They are not
run here (they TRUNCATE their database); ``--help`` imports them."""

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
        "bench/otlp.py",
        "bench/ablations/lifecycle_ablations.py",
        "bench/activity.py",
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
