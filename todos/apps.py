from __future__ import annotations

from django.apps import AppConfig


class TodosConfig(AppConfig):
    name = "todos"
    verbose_name = "Todos"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The queue gauges on /metrics (todos/gauges.py): a collector, read on scrape, throttled.
        from todos import gauges

        gauges.register()
        gauges.register_usage()
