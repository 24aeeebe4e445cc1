"""The generated SECRET_KEY under a race: processes starting together all read one key."""

from __future__ import annotations

from pathlib import Path

from switchboard import secret_key
from tests.concurrency.harness import at_once


def test_load_or_create_gives_concurrent_callers_one_key(tmp_path: Path) -> None:
    path = tmp_path / "secret_key"

    keys = at_once(8, lambda: secret_key.load_or_create(path), timeout=10)

    assert len(keys) == 8
    assert set(keys) == {path.read_text().strip()}
