"""The benchmarks still start: their variants are rewritten from the product's statements at
import, and a statement that changed shape stops them with a message (bench/lifecycle.py
``_rewrite``). They are not run here (they TRUNCATE their database); ``--help`` imports them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("script", ["bench/lifecycle.py", "bench/mcp.py"])
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
