from __future__ import annotations

from django.apps import AppConfig


class ActivityConfig(AppConfig):
    """Activity: ``todo_activity``, the record of what happened to each todo beyond its state."""

    name = "activity"
    verbose_name = "Activity"
    default_auto_field = "django.db.models.BigAutoField"
