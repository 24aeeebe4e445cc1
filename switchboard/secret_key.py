"""The SECRET_KEY used when the environment gives none: generated once, kept under ``.data/``.

Settings hold it as :func:`lazy`, so importing them reads and writes no file: the key is read
(or created) when something first signs with it, a session or an MCP session id say.
"""

from __future__ import annotations

import functools
import os
import secrets
import time
from pathlib import Path
from typing import cast

from django.utils.functional import SimpleLazyObject


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def load_or_create(path: Path) -> str:
    """Return the key stored at ``path``, creating it (mode 0600) on first use.

    Creation is atomic (``O_EXCL``), so two processes starting together agree on one key.
    """
    existing = _read(path)
    if existing:
        return existing
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        # Another process won the race; wait for it to finish writing.
        for _ in range(50):
            existing = _read(path)
            if existing:
                return existing
            time.sleep(0.02)
        raise RuntimeError(f"{path} exists but stays empty") from None
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    return key


def lazy(path: Path) -> str:
    """Return the key at ``path`` as a string that is loaded (or created) on first use.

    A ``SimpleLazyObject`` passes for a ``str`` (``isinstance``, ``bool``, ``len``, ``encode``):
    Django reads SECRET_KEY through ``force_bytes`` and checks it with ``not value``, both of
    which load it.
    """
    return cast(str, SimpleLazyObject(functools.partial(load_or_create, path)))
