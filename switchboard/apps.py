from __future__ import annotations

from django.apps import AppConfig


class SwitchboardConfig(AppConfig):
    name = "switchboard"
    verbose_name = "Switchboard"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from switchboard import runtime_settings
        from switchboard.models import Setting

        # An admin edit takes effect in this process at once (others within the cache TTL).
        # weak=False: ``clear`` is local, and a weak reference would die when ready() returns.
        def clear(**kwargs: object) -> None:
            runtime_settings.clear_cache()

        post_save.connect(clear, sender=Setting, weak=False, dispatch_uid="runtime-settings-save")
        post_delete.connect(
            clear, sender=Setting, weak=False, dispatch_uid="runtime-settings-delete"
        )

        # django-prometheus registers its request metrics on the first middleware instance,
        # unlocked: two handlers built at once (test clients in threads) would both register
        # and one fails with DuplicateTimeseries. Register them here, once, before any request.
        from django_prometheus.middleware import Metrics

        Metrics.get_instance()
