"""The locks are in step with pyproject.toml, and the installed set is the locked one.

``requirements.lock`` (what ``make run`` installs) and ``requirements-dev.lock`` (``make test``)
are written by ``make lock`` from ``pyproject.toml``: exact versions, each with the hashes of its
files, installed with ``pip install --require-hashes`` (docs/decisions/0025-vendor-boundaries.md).
A dependency added or re-pinned in pyproject without ``make lock``, or a virtualenv that drifted
from the lock (a hand-installed upgrade), fails here, so CI runs what was locked.
"""

from __future__ import annotations

import importlib.metadata
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
DEV_LOCK = ROOT / "requirements-dev.lock"


@dataclass(frozen=True)
class Locked:
    name: str  # canonical
    version: Version
    marker: Marker | None
    hashes: tuple[str, ...]

    def applies(self) -> bool:
        return self.marker is None or self.marker.evaluate()


def parse_lock(text: str) -> dict[str, Locked]:
    """The entries of a hashed lock (``name==version ; marker`` then ``--hash=`` lines)."""
    entries: dict[str, Locked] = {}
    logical: list[str] = []
    current = ""
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        logical.append(current + line)
        current = ""
    if current:
        logical.append(current)
    for entry in logical:
        words = entry.split()
        hashes = tuple(w.removeprefix("--hash=") for w in words if w.startswith("--hash="))
        spec = " ".join(w for w in words if not w.startswith("--hash="))
        requirement = Requirement(spec)
        pins = [s for s in requirement.specifier if s.operator == "=="]
        assert len(pins) == 1, f"not an exact pin in the lock: {spec!r}"
        name = canonicalize_name(requirement.name)
        entries[name] = Locked(name, Version(pins[0].version), requirement.marker, hashes)
    return entries


def pyproject_requirements() -> tuple[list[Requirement], list[Requirement]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = [Requirement(text) for text in project["dependencies"]]
    dev = [Requirement(text) for text in project["optional-dependencies"]["dev"]]
    return runtime, dev


def out_of_step(requirements: list[Requirement], lock: dict[str, Locked]) -> list[str]:
    """Each requirement missing from ``lock`` or locked at a version its specifier refuses."""
    problems = []
    for requirement in requirements:
        locked = lock.get(canonicalize_name(requirement.name))
        if locked is None:
            problems.append(f"{requirement.name}: not in the lock")
        elif not requirement.specifier.contains(locked.version, prereleases=True):
            problems.append(f"{requirement.name}: locked {locked.version}, pyproject {requirement}")
    return problems


def drift(lock: dict[str, Locked]) -> list[str]:
    """Each locked package (for this interpreter and platform) not installed at its version."""
    problems = []
    for locked in lock.values():
        if not locked.applies():
            continue
        try:
            installed = Version(importlib.metadata.version(locked.name))
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"{locked.name}: locked {locked.version}, not installed")
            continue
        if installed != locked.version:
            problems.append(f"{locked.name}: locked {locked.version}, installed {installed}")
    return problems


@pytest.fixture(scope="module")
def runtime_lock() -> dict[str, Locked]:
    return parse_lock(LOCK.read_text())


@pytest.fixture(scope="module")
def dev_lock() -> dict[str, Locked]:
    return parse_lock(DEV_LOCK.read_text())


def test_every_runtime_dependency_is_locked_at_a_version_pyproject_allows(
    runtime_lock: dict[str, Locked], dev_lock: dict[str, Locked]
) -> None:
    runtime, _ = pyproject_requirements()
    assert out_of_step(runtime, runtime_lock) == []
    assert out_of_step(runtime, dev_lock) == []


def test_every_development_dependency_is_locked_at_a_version_pyproject_allows(
    dev_lock: dict[str, Locked],
) -> None:
    _, dev = pyproject_requirements()
    assert out_of_step(dev, dev_lock) == []


def test_the_runtime_lock_is_the_development_lock_less_the_tools(
    runtime_lock: dict[str, Locked], dev_lock: dict[str, Locked]
) -> None:
    differ = {
        name: (locked.version, dev_lock[name].version if name in dev_lock else None)
        for name, locked in runtime_lock.items()
        if name not in dev_lock or dev_lock[name].version != locked.version
    }
    assert differ == {}


def test_every_locked_package_carries_its_hashes(
    runtime_lock: dict[str, Locked], dev_lock: dict[str, Locked]
) -> None:
    unhashed = [n for lock in (runtime_lock, dev_lock) for n, e in lock.items() if not e.hashes]
    assert unhashed == []
    assert all(h.startswith("sha256:") for e in dev_lock.values() for h in e.hashes)


def test_the_installed_versions_are_the_locked_ones(dev_lock: dict[str, Locked]) -> None:
    assert drift(dev_lock) == []


def test_a_pyproject_change_without_make_lock_is_caught(dev_lock: dict[str, Locked]) -> None:
    moved = [Requirement("Django>=6.1,<6.2"), Requirement("a-package-nobody-locked>=1")]
    assert out_of_step(moved, dev_lock) == [
        f"Django: locked {dev_lock['django'].version}, pyproject Django<6.2,>=6.1",
        "a-package-nobody-locked: not in the lock",
    ]


def test_an_installed_version_other_than_the_locked_one_is_caught(
    dev_lock: dict[str, Locked],
) -> None:
    real = dev_lock["django"]
    older = {"django": Locked("django", Version("5.2.0"), None, real.hashes)}
    assert drift(older) == [
        f"django: locked 5.2.0, installed {importlib.metadata.version('django')}"
    ]
    # A package locked only for another platform is not expected here.
    elsewhere = {"pywin32": Locked("pywin32", Version("1"), Marker("sys_platform == 'x'"), ())}
    assert drift(elsewhere) == []
