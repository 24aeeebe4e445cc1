from __future__ import annotations

from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "alerts"
    verbose_name = "Alerts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The sweeper's alert step (alerts/sweep.py): todos/sweeps.py runs the steps registered
        # with it, so the todos core never imports the app above it.
        from activity import forget
        from alerts import sweep
        from todos import retention, sweeps

        sweeps.register_step("alerts", sweep.step)
        # Forgetting a todo rewrites its alerts in the same transaction (alerts/sweep.py's
        # `forget`): activity/forget.py runs the erasers registered with it, for the same reason.
        forget.register_eraser("alerts", sweep.forget)
        # Retention deleting a todo rewrites and unlinks its alerts in the batch's transaction
        # (alerts/sweep.py's `unlink`): todos/retention.py runs its erasers likewise.
        retention.register_eraser("alerts", sweep.unlink)
