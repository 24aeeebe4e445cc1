from __future__ import annotations

from django.apps import AppConfig


class SwitchboardConfig(AppConfig):
    name = "switchboard"
    verbose_name = "Switchboard"
    default_auto_field = "django.db.models.BigAutoField"
