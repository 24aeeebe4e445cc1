from __future__ import annotations

from django.apps import AppConfig


class McpServerConfig(AppConfig):
    """MCP for agents (docs/guides/agents.md).

    The package is ``mcp_server``, not ``mcp``: the official SDK's import name is ``mcp``, and a
    top-level ``mcp/`` package in this repository would shadow it on ``sys.path``.
    """

    name = "mcp_server"
    label = "mcp"
    verbose_name = "MCP"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Subscription streams ring on ready and rung changes (mcp_server/doorbell.py), heard on
        # this process's one change feed.
        from mcp_server import doorbell
        from switchboard.lib import changefeed, todowatch

        changefeed.FEED.subscribe(doorbell.DOORBELL.heard)
        # MCP Tasks: tasks/result and the listen streams' notifications/tasks wait on a todo.
        changefeed.FEED.subscribe(todowatch.heard)
