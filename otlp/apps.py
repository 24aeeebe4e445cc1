from __future__ import annotations

from django.apps import AppConfig


class OtlpConfig(AppConfig):
    """The OTLP/HTTP trace receiver and the spans it stores (docs/guides/agent-activity.md)."""

    name = "otlp"
    verbose_name = "OTLP traces"
    default_auto_field = "django.db.models.BigAutoField"
