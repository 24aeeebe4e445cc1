"""The dependency direction of docs/architecture.md, as `lint-imports` checks it.

The layers contract in pyproject.toml names modules, not whole packages (import-linter's layers
cannot contain one another, and ``todos.intake`` sits above the rest of ``todos``), so a module
the contract does not name would escape it: one test makes sure every product module is named.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
PACKAGES = CONFIG["root_packages"]

# Configuration Django loads before any app, and app plumbing with no imports of its own.
OUTSIDE_THE_LAYERS = {
    "switchboard.settings",
    "switchboard.settings_test",
    "switchboard.embedded",
    "switchboard.secret_key",
}


def _layer_modules() -> list[str]:
    # The first contract places every module; the others order modules inside one package.
    contract = CONFIG["contracts"][0]
    return [
        name.strip()
        for layer in contract["layers"]
        for name in layer.replace("|", ":").split(":")
        if name.strip()
    ]


def _product_modules() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts or parts[-1] in ("__init__", "apps"):
                continue
            found.append(".".join(parts))
    return found


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(cwd)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_product_module_sits_in_a_layer() -> None:
    layers = _layer_modules()
    unplaced = [
        module
        for module in _product_modules()
        if module not in OUTSIDE_THE_LAYERS
        and not any(module == name or module.startswith(name + ".") for name in layers)
    ]
    assert unplaced == [], f"add these modules to a layer in pyproject.toml: {unplaced}"


def test_the_layers_contract_is_kept() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(CONFIG['contracts'])} kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("attempts/rules.py", "from todos import lifecycle"),
        ("switchboard/scope.py", "import attempts.models"),
        ("switchboard/lib/text.py", "from switchboard import models"),
        ("todos/lifecycle/agent.py", "from todos.intake import deliveries"),
        ("todos/intake/sources.py", "import mcp_server.tools"),
        # The humans' surfaces: one page module importing another (each group is independent),
        # a shared piece importing a page, pure presentation importing a shared piece.
        ("todos/views.py", "from activity import views"),
        ("activity/views.py", "from todos import overview_views"),
        ("activity/live.py", "from activity import views"),
        ("switchboard/endpoint_views.py", "from todos.intake import source_views"),
        ("activity/markup.py", "from todos import pages"),
        ("todos/pages.py", "from activity import markup"),
        ("todos/markup.py", "from todos import overview_views"),
        ("todos/present.py", "from todos import pages"),
        ("todos/intake/traces.py", "from todos.intake import source_views"),
        # One into each group of the todos core, top to bottom. The lifecycle and the reads are
        # siblings: the lifecycle reading through queries closed a circle back to the models.
        ("todos/lifecycle/core.py", "from todos import sweeps"),
        ("todos/lifecycle/core.py", "from todos import queries"),
        ("todos/queries.py", "from todos import lifecycle"),
        ("todos/push.py", "from todos import lifecycle"),
        ("todos/filters.py", "from todos import queries"),
        ("todos/types.py", "from todos import filters"),
        ("todos/filters.py", "from todos import types"),
        # Rule.clean once imported the lifecycle, inside the method: still an import.
        ("todos/models.py", "from todos import lifecycle"),
        ("todos/states.py", "from todos import models"),
        ("todos/limits.py", "from todos import states"),
        ("todos/intake/routing.py", "from todos import limits"),
        # Inside the lifecycle: an actor never imports another, core never an actor.
        ("todos/lifecycle/agent.py", "from todos.lifecycle import operator"),
        ("todos/lifecycle/core.py", "from todos.lifecycle import bulk"),
        ("todos/lifecycle/statements.py", "from todos.lifecycle import core"),
    ],
)
def test_a_reverse_import_breaks_the_contract(tmp_path: Path, module: str, planted: str) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("*.pyc"))
    target = tmp_path / module
    target.write_text(target.read_text() + f"\n{planted}  # planted by the test\n")

    result = _lint(tmp_path)

    assert result.returncode != 0
    assert "BROKEN" in result.stdout, result.stdout + result.stderr


# Packages that import each other's pages would make a circle the layers cannot see (the
# contract names modules): the todos package imports no module of the apps that read it.
ABOVE_TODOS = ("activity", "otlp", "mcp_server", "a2a_server")


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_todos_package_imports_no_app_above_it() -> None:
    found = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in sorted((ROOT / "todos").rglob("*.py"))
        for name in _imports(path)
        if name.split(".")[0] in ABOVE_TODOS
    }
    assert found == set()
