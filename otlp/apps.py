from __future__ import annotations

from django.apps import AppConfig


class OtlpConfig(AppConfig):
    """The OTLP/HTTP trace receiver and the spans it stores (docs/guides/agent-activity.md)."""

    name = "otlp"
    verbose_name = "OTLP traces"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The store announces the todos it wrote spans for; the refresh throttles them for the
        # trail pages (otlp/refresh.py), on this process's one change feed.
        from otlp import partitions, refresh
        from switchboard.lib import changefeed
        from todos import sweeps

        changefeed.FEED.subscribe(refresh.heard)
        # The sweeper's spans step: todos/sweeps.py runs the steps registered with it, so the
        # todos core never imports this app (otlp/partitions.py).
        sweeps.register_step("spans", partitions.step)
