from __future__ import annotations

from django.apps import AppConfig


class ActivityConfig(AppConfig):
    """Activity, the trail and the live feed (seed 001); models arrive with the activity issue."""

    name = "activity"
    verbose_name = "Activity"
    default_auto_field = "django.db.models.BigAutoField"
