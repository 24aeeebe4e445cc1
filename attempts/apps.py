from __future__ import annotations

from django.apps import AppConfig


class AttemptsConfig(AppConfig):
    name = "attempts"
    verbose_name = "Attempts"
    default_auto_field = "django.db.models.BigAutoField"
