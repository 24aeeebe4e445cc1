from __future__ import annotations

from django.apps import AppConfig


class A2aServerConfig(AppConfig):
    """A2A for requester agents (docs/guides/a2a.md).

    The package is ``a2a_server``, not ``a2a``: the official SDK's import name is ``a2a``, and a
    top-level ``a2a/`` package in this repository would shadow it on ``sys.path``.
    """

    name = "a2a_server"
    verbose_name = "A2A"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Open streams and blocking sends wake on every committed change of their todo
        # (switchboard/lib/todowatch.py, shared with MCP Tasks), heard on this process's one
        # change feed; subscribing twice is once.
        from switchboard.lib import changefeed
        from switchboard.lib import todowatch as watch

        changefeed.FEED.subscribe(watch.heard)
