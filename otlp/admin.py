"""Read-only admin list of ``todo_spans``, across todos.

Like the attempts and activity lists (``attempts/admin.py``, ``activity/admin.py``), and for the
same reason: Django 6 refuses to register a model whose primary key is composite, and
``(todo_id, trace_id, span_id)`` is. So the changelist is served through the Todo admin's URLs
(``todos.admin.TodoAdmin.get_urls``, through ``switchboard.lib.admin.serve_under_todo``) by an
unregistered ``TodoSpanAdmin``, and its rows link to their todo. Nothing here writes: spans are
written only by ``otlp.store``.
"""

from __future__ import annotations

from django.contrib.admin import AdminSite
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern

from otlp.models import TodoSpan
from switchboard.lib.admin import TodoRowsAdmin, changelist_urls, serve_under_todo


class TodoSpanAdmin(TodoRowsAdmin):
    """The span list. Not registered (see the module docstring); mounted by ``urls()``."""

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
    list_filter = ("category", "status_code", "truncated")
    search_fields = ("=todo__id",)
    ordering = ("-received_at",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[TodoSpan]:
        # The list names the todo by id (the row's own column) and never reads attributes.
        return super().get_queryset(request).defer("attributes")


@serve_under_todo
def urls(admin_site: AdminSite) -> list[URLPattern]:
    """The span changelist, for a registered ModelAdmin's ``get_urls`` to include."""
    return changelist_urls(TodoSpanAdmin(TodoSpan, admin_site), "spans/")
