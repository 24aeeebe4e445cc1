"""Read-only admin list of ``todo_activity``, across todos.

Like the attempts list (``attempts/admin.py``), and for the same reason: Django 6 refuses to
register a model whose primary key is composite, and ``(todo_id, seq)`` is. So the changelist is
served through the Todo admin's URLs (``todos.admin.TodoAdmin.get_urls``, through
``switchboard.lib.admin.serve_under_todo``) by an unregistered
``TodoActivityAdmin``, and its rows link to their todo. Nothing here writes: rows are written
only by the lifecycle's statements.
"""

from __future__ import annotations

from django.contrib.admin import AdminSite
from django.urls import URLPattern

from activity.models import TodoActivity
from switchboard.lib.admin import TodoRowsAdmin, changelist_urls, serve_under_todo


class TodoActivityAdmin(TodoRowsAdmin):
    """The activity list. Not registered (see the module docstring); mounted by ``urls()``."""

    list_display = ("todo_link", "seq", "at", "kind", "actor_kind", "actor_ref", "message")
    list_filter = ("kind", "actor_kind")
    # ``todo__id`` is the todo_id column itself (Django trims the join to the pk).
    search_fields = ("=todo__id",)
    ordering = ("-at", "todo_id", "-seq")


@serve_under_todo
def urls(admin_site: AdminSite) -> list[URLPattern]:
    """The activity changelist, for a registered ModelAdmin's ``get_urls`` to include."""
    return changelist_urls(TodoActivityAdmin(TodoActivity, admin_site), "activity/")
