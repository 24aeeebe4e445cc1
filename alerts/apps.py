from __future__ import annotations

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "alerts"
    verbose_name = "Alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The sweeper's alert step (alerts/sweep.py): todos/sweeps.py runs the steps registered
        # with it, so the todos core never imports the app above it.
        from alerts import sweep
        from todos import sweeps

        sweeps.register_step("alerts", sweep.step)
