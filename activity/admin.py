"""Read-only admin list of ``todo_activity``, across todos.

Like the attempts list (``attempts/admin.py``), and for the same reason: Django 6 refuses to
register a model whose primary key is composite, and ``(todo_id, seq)`` is. So the changelist is
served through the Todo admin's URLs (``todos.admin.TodoAdmin.get_urls``) by an unregistered
``TodoActivityAdmin``, and its rows link to their todo. Nothing here writes: rows are written
only by the lifecycle's statements.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin import AdminSite
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from activity.models import TodoActivity


class TodoActivityAdmin(admin.ModelAdmin):
    """The activity list. Not registered (see the module docstring); mounted by ``urls()``."""

    change_list_template = "admin/activity/todoactivity/change_list.html"
    list_display = ("todo_link", "seq", "at", "kind", "actor_kind", "actor_ref", "message")
    # No row links: a link would point at a change page that cannot exist for a composite key.
    list_display_links = None
    list_filter = ("kind", "actor_kind")
    # ``todo__id`` is the todo_id column itself (Django trims the join to the pk).
    search_fields = ("=todo__id",)
    ordering = ("-at", "todo_id", "-seq")
    # The full count of a large, append-only table is a sequential scan on every page view.
    show_full_result_count = False
    actions = None

    def get_queryset(self, request: HttpRequest) -> QuerySet[TodoActivity]:
        # The list names the todo by id (the row's own column): no join, no todo payloads.
        return super().get_queryset(request).select_related(None)

    @admin.display(description="todo", ordering="todo_id")
    def todo_link(self, obj: TodoActivity) -> SafeString:
        url = reverse("admin:todos_todo_change", args=[quote(obj.todo_id)])
        return format_html('<a href="{}">{}</a>', url, obj.todo_id)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def urls(admin_site: AdminSite) -> list[URLPattern]:
    """The activity changelist, for a registered ModelAdmin's ``get_urls`` to include.

    Its URL name is the one a registered model's changelist would have, so the admin's own
    templates (sorting, filters) find it.
    """
    model_admin = TodoActivityAdmin(TodoActivity, admin_site)
    return [
        path(
            "activity/",
            admin_site.admin_view(model_admin.changelist_view),
            name="activity_todoactivity_changelist",
        )
    ]
