"""The official MCP conformance suite (``@modelcontextprotocol/conformance``), run through npx.

One pinned version for every run: tests/oauth/test_conformance.py runs its authorization-server
scenarios, tests/mcp/test_conformance.py its server Tasks scenarios (docs/guides/requesters.md,
"Conformance", names the same version). Like tests/mcp/test_inspector.py, a run fails, never
skips, when npx is missing: the npm registry is reachable wherever the tests run.
"""

from __future__ import annotations

import shutil

import pytest

CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"


def conformance_argv(*args: str) -> list[str]:
    """The command that runs the suite's ``conformance`` CLI with ``args`` on Node 22."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.fail("npx is needed (Node.js): the conformance suite is an npm package")
    return [npx, "-y", "--prefer-offline", "-p", "node@22", "-p", CONFORMANCE, "conformance", *args]
