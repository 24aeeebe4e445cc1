from __future__ import annotations

from django.apps import AppConfig


class OtlpConfig(AppConfig):
    """The OTLP/HTTP trace receiver (seed 001); models arrive with the OTLP issue."""

    name = "otlp"
    verbose_name = "OTLP traces"
    default_auto_field = "django.db.models.BigAutoField"
