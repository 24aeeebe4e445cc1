"""Read-only admin list of ``todo_spans``, across todos.

Like the attempts and activity lists (``attempts/admin.py``, ``activity/admin.py``), and for the
same reason: Django 6 refuses to register a model whose primary key is composite, and
``(todo_id, trace_id, span_id)`` is. So the changelist is served through the Todo admin's URLs
(``todos.admin.TodoAdmin.get_urls``) by an unregistered ``TodoSpanAdmin``, and its rows link to
their todo. Nothing here writes: spans are written only by ``otlp.store``.
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

from otlp.models import TodoSpan
from switchboard.lib.admin import RefusesUnusableQueries


class TodoSpanAdmin(RefusesUnusableQueries, admin.ModelAdmin):
    """The span list. Not registered (see the module docstring); mounted by ``urls()``."""

    change_list_template = "admin/otlp/todospan/change_list.html"
    list_display = (
        "todo_link",
        "attempt_seq",
        "name",
        "category",
        "tool",
        "status_code",
        "service_name",
        "start_at",
        "end_at",
        "truncated",
    )
    list_display_links = None
    list_filter = ("category", "status_code", "truncated")
    search_fields = ("=todo__id",)
    ordering = ("-received_at",)
    show_full_result_count = False
    actions = None

    def get_queryset(self, request: HttpRequest) -> QuerySet[TodoSpan]:
        # The list names the todo by id (the row's own column) and never reads attributes.
        return super().get_queryset(request).select_related(None).defer("attributes")

    @admin.display(description="todo", ordering="todo_id")
    def todo_link(self, obj: TodoSpan) -> SafeString:
        url = reverse("admin:todos_todo_change", args=[quote(obj.todo_id)])
        return format_html('<a href="{}">{}</a>', url, obj.todo_id)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def urls(admin_site: AdminSite) -> list[URLPattern]:
    """The span changelist, for a registered ModelAdmin's ``get_urls`` to include."""
    model_admin = TodoSpanAdmin(TodoSpan, admin_site)
    return [
        path(
            "spans/",
            admin_site.admin_view(model_admin.changelist_view),
            name="otlp_todospan_changelist",
        )
    ]
