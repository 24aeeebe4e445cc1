"""The alert step in the sweeper's pass: registered by the app, its lines in the pass's report,
and a failing step never ending the pass for the steps after it."""

from __future__ import annotations

import pytest

from alerts import sweep
from todos import sweeps


@pytest.mark.django_db(transaction=True)
def test_the_pass_runs_the_alert_step_and_survives_a_failing_step(personas: object) -> None:
    assert sweeps._STEPS["alerts"] is sweep.step
    ran: list[str] = []

    def broken(report: sweeps.PassReport) -> None:
        raise RuntimeError("boom")

    def after(report: sweeps.PassReport) -> None:
        ran.append("after")

    sweeps.register_step("test-broken", broken)
    sweeps.register_step("test-after", after)
    try:
        report = sweeps.run_pass()
    finally:
        del sweeps._STEPS["test-broken"], sweeps._STEPS["test-after"]

    assert ran == ["after"]
    alerts = report.steps["alerts"]
    assert isinstance(alerts, sweep.AlertReport) and not alerts.failed_kinds
    assert alerts.opened == alerts.resolved == 0
