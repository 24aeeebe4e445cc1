"""The test run's settings: the product's, in test mode (pyproject's pytest section names it).

pytest-django imports the settings before any conftest is loaded, so a conftest could not switch
test mode on in time; this module does it before the product's settings are read. It sets the
environment variable rather than only ``TESTING``, so the servers the tests start as
subprocesses run in test mode too.
"""

from __future__ import annotations

import os

os.environ["SWITCHBOARD_TESTING"] = "1"
# Push receivers in the tests listen on loopback (todos/push.py refuses it otherwise).
os.environ.setdefault("SWITCHBOARD_PUSH_ALLOW_PRIVATE", "1")

from switchboard.settings import *  # noqa: F403
