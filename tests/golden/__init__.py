"""Golden copies of the HTML the apps build in Python (each app's ``markup.py``).

``assert_golden(name, text)`` compares ``text`` with ``tests/golden/<name>``: a change to a
builder's output fails its test until the copy is rewritten on purpose, by running the test
with ``SWITCHBOARD_UPDATE_GOLDEN=1`` and reviewing the diff in git. A missing copy fails too
(unless writing), so a test can never pass by comparing nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPDATE = "SWITCHBOARD_UPDATE_GOLDEN"


def assert_golden(name: str, text: str) -> None:
    path = HERE / name
    if os.environ.get(UPDATE) == "1":
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"no golden copy {path}: run with {UPDATE}=1 and review it"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"the markup changed from {path} (rewrite it with {UPDATE}=1)"
