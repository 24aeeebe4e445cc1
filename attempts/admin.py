"""Read-only admin views of ``todo_attempts``: a list across todos, and an inline on each todo.

Django 6 refuses to register a model whose primary key is composite (``AdminSite.register``
raises ImproperlyConfigured), and ``(todo_id, seq)`` is. So there is no per-attempt detail page:
the changelist is served through the Todo admin's URLs (``todos.admin.TodoAdmin.get_urls``) by an
unregistered ``TodoAttemptAdmin``, its rows link to their todo, and the todo's page shows every
kept attempt in full (``TodoAttemptInline``). Nothing here writes: rows are opened and closed only
by ``todos.lifecycle``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin import AdminSite
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern
from django.utils.html import format_html
from django.utils.safestring import SafeString

from attempts.models import DIED_OUTCOMES, TodoAttempt
from switchboard.lib.admin import TodoRowsAdmin, changelist_urls


class DiedListFilter(admin.SimpleListFilter):
    """Died (the lease ran out: taken over or reaped) versus reported by its holder."""

    title = "died"
    parameter_name = "died"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "died"), ("no", "reported or still open")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(outcome__in=DIED_OUTCOMES)
        if self.value() == "no":
            return queryset.exclude(outcome__in=DIED_OUTCOMES)
        return queryset


class TodoAttemptAdmin(TodoRowsAdmin):
    """The attempts list. Not registered (see the module docstring); mounted by ``urls()``."""

    list_display = (
        "todo_link",
        "seq",
        "attempt",
        "claimer_kind",
        "claimant",
        "outcome",
        "disposition",
        "died",
        "claimed_at",
        "ended_at",
    )
    list_filter = ("outcome", "disposition", "claimer_kind", DiedListFilter)
    # ``todo__id`` is the todo_id column itself (Django trims the join to the pk).
    search_fields = ("=todo__id", "claimant", "owner")
    date_hierarchy = "claimed_at"
    ordering = ("-claimed_at", "todo_id", "-seq")

    @admin.display(description="died", boolean=True)
    def died(self, obj: TodoAttempt) -> bool:
        return obj.died


def urls(admin_site: AdminSite) -> list[URLPattern]:
    """The attempts changelist, for a registered ModelAdmin's ``get_urls`` to include."""
    return changelist_urls(TodoAttemptAdmin(TodoAttempt, admin_site), "attempts/")


class TodoAttemptInline(admin.TabularInline):
    """A todo's kept attempts, newest first, on its (view-only) page.

    A composite key is no obstacle here: the todo's page is never submitted, so the formset
    only renders and never has to address a row by its key.
    """

    model = TodoAttempt
    fields = (
        "seq",
        "attempt",
        "claimer",
        "claimed_at",
        "last_heartbeat_at",
        "ended_at",
        "outcome_display",
        "disposition",
        "summary",
        "artifact",
    )
    readonly_fields = fields
    ordering = ("-seq",)
    extra = 0
    max_num = 0
    can_delete = False
    verbose_name_plural = "attempts, newest first"

    @admin.display(description="claimer")
    def claimer(self, obj: TodoAttempt) -> str:
        who = obj.claimant or obj.owner
        return f"{obj.claimer_kind}: {who}"

    @admin.display(description="outcome")
    def outcome_display(self, obj: TodoAttempt) -> SafeString:
        # Died (the lease ran out) and failed (the holder said so) must not look alike.
        if obj.outcome is None:
            return format_html("{}", "open")
        if obj.died:
            return format_html("<strong>{}</strong> (died)", obj.outcome)
        return format_html("{}", obj.outcome)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
