from __future__ import annotations

from django.apps import AppConfig


class ActivityConfig(AppConfig):
    """Activity: ``todo_activity``, the record of what happened to each todo beyond its state."""

    name = "activity"
    verbose_name = "Activity"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The Board's live updates hear every committed change (activity/live.py) on this
        # process's one change feed; the statements announce them (todos/sql/_notify.sql).
        from activity import live
        from switchboard.lib import changefeed

        changefeed.FEED.subscribe(live.relay)
