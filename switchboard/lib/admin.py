"""Shared pieces of the django-admin pages: the show-once page for secrets, JSON rendering.

A credential's plaintext (an endpoint key, a webhook secret) exists only in the response that
creates it. It is rendered into that response's body, never put in a message, a log entry or a
redirect: Django's message storage is a signed (not encrypted) cookie or the session, and either
would keep the plaintext around after the page that showed it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.admin import AdminSite, ModelAdmin
from django.contrib.admin import display as admin_display
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ERROR_FLAG
from django.db.models import Model, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from switchboard.lib import jsonlimits
from switchboard.lib.guards import holds_secret


@dataclass(frozen=True, slots=True)
class Shown:
    """One secret on the show-once page: what it is for, the plaintext, and how to use it."""

    label: str
    secret: str
    hint: str = ""


def show_once(
    request: HttpRequest,
    model_admin: ModelAdmin[Any],
    *,
    title: str,
    items: Sequence[Shown],
    links: Sequence[tuple[str, str]],
    kept: str = "",
) -> TemplateResponse:
    """Render the secrets in ``items`` on a page that is never cached; ``links`` lead on.
    ``kept`` says how the server keeps them, when not as a key is (a short prefix only)."""
    context = {
        **model_admin.admin_site.each_context(request),
        "title": title,
        "opts": model_admin.opts,
        "items": items,
        "links": links,
        "kept": kept,
    }
    response = TemplateResponse(request, "admin/shown_once.html", context)
    return holds_secret(response)


def adopt(obj: Model, saved: Model) -> None:
    """Make ``obj``, the add view's unsaved object, the row that a writer function saved.

    Configuration is written by its writer module (``switchboard.credentials``,
    ``todos.intake.sources``), which builds and saves its own instance. The admin's add view goes on
    with the object its form built: its inlines, log entry and redirect use it, so that object
    must carry the saved row's identity and values.
    """
    for field in saved._meta.concrete_fields:
        setattr(obj, field.attname, getattr(saved, field.attname))
    obj._state.adding = False
    obj._state.db = saved._state.db


def pretty_json(value: Any) -> SafeString:
    """``value`` as indented JSON in a ``<pre>``, escaped (payloads are untrusted input)."""
    if value is None:
        return format_html("<span>{}</span>", "—")
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return format_html('<pre style="white-space: pre-wrap; margin: 0">{}</pre>', text)


def _unusable(text: str) -> bool:
    return jsonlimits.text_problem(text) is not None


class RefusesUnusableQueries:
    """A ModelAdmin mixin: a query string or an object id PostgreSQL cannot compare (a NUL)
    reads as a bad lookup or a missing object, as Django answers others, not as a 500."""

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        if any(_unusable(k) or any(_unusable(v) for v in vs) for k, vs in request.GET.lists()):
            # Django's own answer to a lookup it cannot apply: the list with ?e=1.
            return HttpResponseRedirect(f"{request.path}?{ERROR_FLAG}=1")
        return super().changelist_view(request, extra_context)  # type: ignore[misc]

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        if _unusable(object_id):
            return None
        return super().get_object(request, object_id, from_field)  # type: ignore[misc]


class ReadOnlyAdmin(ModelAdmin):
    """An admin that shows rows and writes none: no add, change or delete, whatever the
    user's permissions (the rows' writer is the lifecycle, the sweeper or the protocol)."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class TodoRowsAdmin(RefusesUnusableQueries, ReadOnlyAdmin):
    """A read-only list of rows that belong to a todo and have a composite primary key
    (``todo_attempts``, ``todo_activity``: ``(todo_id, seq)``).

    Django 6 refuses to register a model whose primary key is composite, so such a list is an
    unregistered ModelAdmin mounted by ``changelist_urls`` from a registered admin's
    ``get_urls``. Its rows link to their todo (a change page of their own cannot exist), the
    list reads no todo columns, and nothing here writes: the lifecycle is the rows' only writer.
    """

    list_display_links = None
    change_list_template = "admin/todo_rows_change_list.html"
    # The full count of a large, append-mostly table is a sequential scan on every page view.
    show_full_result_count = False
    actions = None

    def get_queryset(self, request: HttpRequest) -> Any:
        # The list names the todo by id (the row's own column): no join, no todo payloads.
        return super().get_queryset(request).select_related(None)

    @admin_display(description="todo", ordering="todo_id")
    def todo_link(self, obj: Any) -> SafeString:
        url = reverse("admin:todos_todo_change", args=[quote(obj.todo_id)])
        return format_html('<a href="{}">{}</a>', url, obj.todo_id)


def changelist_urls(model_admin: ModelAdmin, route: str) -> list[URLPattern]:
    """Mount an unregistered admin's changelist at ``route``, under the URL name a registered
    model's changelist would have, so the admin's own templates (sorting, filters) find it."""
    opts = model_admin.model._meta
    return [
        path(
            route,
            model_admin.admin_site.admin_view(model_admin.changelist_view),
            name=f"{opts.app_label}_{opts.model_name}_changelist",
        )
    ]


# The changelists the Todo admin serves under its URLs for the apps above todos (activity,
# otlp): each app's admin module adds its own when Django's admin autodiscovery imports it, so
# the Todo admin (todos/admin.py) imports no app that imports todos.
_UNDER_TODO: list[Callable[[AdminSite], list[URLPattern]]] = []


def serve_under_todo(
    urls: Callable[[AdminSite], list[URLPattern]],
) -> Callable[[AdminSite], list[URLPattern]]:
    """Have the Todo admin include ``urls(site)`` in its own (a decorator; once per function)."""
    if urls not in _UNDER_TODO:
        _UNDER_TODO.append(urls)
    return urls


def under_todo_urls(admin_site: AdminSite) -> list[URLPattern]:
    """The URL patterns ``serve_under_todo`` collected, in the order the apps were loaded."""
    return [pattern for urls in _UNDER_TODO for pattern in urls(admin_site)]


# The Todo admin's actions whose writer sits in an app above todos (the activity app's Forget,
# activity/forget.py): the Todo admin declares each action, so Django's checks, permissions and
# the action menu see it, and runs the body that app registers when the admin autodiscovers it
# (``todo_action``), as its URLs take the apps' changelists above.
type TodoActionBody = Callable[[ModelAdmin[Any], HttpRequest, QuerySet[Any]], HttpResponse | None]
_TODO_ACTIONS: dict[str, TodoActionBody] = {}


def todo_action(name: str) -> Callable[[TodoActionBody], TodoActionBody]:
    """Register the body of the Todo admin's action ``name`` (a decorator; a second
    registration of a name replaces the first)."""

    def register(body: TodoActionBody) -> TodoActionBody:
        _TODO_ACTIONS[name] = body
        return body

    return register


def run_todo_action(
    name: str, model_admin: ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Any]
) -> HttpResponse | None:
    """Run the registered body of the Todo admin's action ``name``."""
    return _TODO_ACTIONS[name](model_admin, request, queryset)
