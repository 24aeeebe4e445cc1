"""Fixtures the race tests borrow from the tests of the app they race."""

from __future__ import annotations

from tests.intake.conftest import hook

__all__ = ["hook"]
