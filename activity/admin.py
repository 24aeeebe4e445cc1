"""Read-only admin list of ``todo_activity``, across todos; the Todo admin's Forget action.

Like the attempts list (``attempts/admin.py``), and for the same reason: Django 6 refuses to
register a model whose primary key is composite, and ``(todo_id, seq)`` is. So the changelist is
served through the Todo admin's URLs (``todos.admin.TodoAdmin.get_urls``, through
``switchboard.lib.admin.serve_under_todo``) by an unregistered
``TodoActivityAdmin``, and its rows link to their todo. Nothing here writes: rows are written
only by the lifecycle's statements.

The Todo admin's **Forget** action (``todos.admin.TodoAdmin.forget_todos``) runs the body here
(registered with ``switchboard.lib.admin.todo_action``): its writer, ``activity/forget.py``, sits
above the todos package, which imports no app above it. It asks first, as Django's delete does,
then forgets through the writer the Board's Forget calls, as the endpoint's owner, recorded as
the staff member's ``human_action``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.admin import AdminSite, ModelAdmin
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import URLPattern

from activity import forget
from activity.models import TodoActivity
from switchboard.lib.admin import TodoRowsAdmin, changelist_urls, serve_under_todo, todo_action
from switchboard.scope import acting_human
from todos.models import Todo


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


# --- the Todo admin's Forget -------------------------------------------------------------------

# The most todos one Forget takes: its question posts each id back, and Django refuses a form of
# more than DATA_UPLOAD_MAX_NUMBER_FIELDS (1,000) fields. More at once: the Board's "Forget
# finished…" on a filter, or manage.py forget.
FORGET_AT_ONCE = 500
# The most ids a message names (messages live in a cookie or the session).
NAMED = 10
UNFINISHED = "not finished (cancel it first)"
ALREADY = "already forgotten"
NO_OWNER = "its endpoint's team has no member to act as"
MEANWHILE = "changed meanwhile (try again)"


@dataclass(frozen=True, slots=True)
class _Selected:
    """One selected todo as the question lists it, and whose scope forgets it."""

    id: str
    title: str
    state: str
    endpoint: str
    human_id: int | None
    skipped: str | None  # why it will not be forgotten; None: it will be


def _selected(queryset: QuerySet[Todo], limit: int) -> list[_Selected]:
    """The first ``limit`` selected todos, by id."""
    rows = queryset.order_by("id").values_list(
        "id",
        "title",
        "state",
        "finished_at",
        "forgotten_at",
        "endpoint__slug",
        "endpoint__owner_id",
        "endpoint__team_id",
    )[:limit]
    acting: dict[tuple[int | None, int | None], int | None] = {}
    found = []
    for todo_id, title, state, finished_at, forgotten_at, slug, owner_id, team_id in rows:
        if (owner_id, team_id) not in acting:
            acting[owner_id, team_id] = acting_human(owner_id, team_id)
        human_id = acting[owner_id, team_id]
        if forgotten_at is not None:
            skipped: str | None = ALREADY
        elif finished_at is None:
            skipped = UNFINISHED
        elif human_id is None:
            skipped = NO_OWNER
        else:
            skipped = None
        found.append(_Selected(todo_id, title, state, slug, human_id, skipped))
    return found


def _named(ids: Sequence[str]) -> str:
    more = len(ids) - NAMED
    return ", ".join(ids[:NAMED]) + (f" and {more} more" if more > 0 else "")


def _todos(n: int) -> str:
    return f"{n} todo{'' if n == 1 else 's'}"


@todo_action("forget")
def forget_todos(
    model_admin: ModelAdmin[Any], request: HttpRequest, queryset: QuerySet[Todo]
) -> TemplateResponse | None:
    """Ask which of the selected todos will be forgotten (and which not, and why); once
    confirmed, forget those through ``activity/forget.py``, each in its owner's scope
    (``acting_human``) and recorded as this staff member's, and say what was done and skipped."""
    selected = _selected(queryset, FORGET_AT_ONCE + 1)
    if len(selected) > FORGET_AT_ONCE:
        model_admin.message_user(
            request,
            f"Select at most {FORGET_AT_ONCE} todos to forget at once; nothing was forgotten."
            " For more, use the Board's Forget finished… on a filter, or manage.py forget.",
            messages.ERROR,
        )
        return None
    forgettable = [s for s in selected if s.skipped is None]
    skipped: dict[str, list[str]] = {}
    for s in selected:
        if s.skipped is not None:
            skipped.setdefault(s.skipped, []).append(s.id)
    if request.POST.get("post") != "yes":
        if not forgettable:
            _say_skipped(model_admin, request, skipped)
            model_admin.message_user(
                request, "None of the selected todos can be forgotten.", messages.WARNING
            )
            return None
        context = {
            **model_admin.admin_site.each_context(request),
            "title": "Forget todos",
            "opts": model_admin.opts,
            "forgettable": forgettable,
            "skipped": [s for s in selected if s.skipped is not None],
            "selected": selected,
            "action_checkbox_name": ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/todos/todo/forget_confirmation.html", context)
    by_human: dict[int, list[str]] = {}
    for s in forgettable:
        assert s.human_id is not None
        by_human.setdefault(s.human_id, []).append(s.id)
    forgotten: set[str] = set()
    for human_id, ids in by_human.items():
        forgotten |= set(forget.forget(human_id, ids, actor_id=request.user.pk))
    missed = [s.id for s in forgettable if s.id not in forgotten]
    if missed:
        skipped[MEANWHILE] = missed
    _say_skipped(model_admin, request, skipped)
    if forgotten:
        model_admin.message_user(
            request,
            f"Forgot {_todos(len(forgotten))}: their content is erased; each keeps a tombstone.",
            messages.SUCCESS,
        )
    return None


def _say_skipped(
    model_admin: ModelAdmin[Any], request: HttpRequest, skipped: dict[str, list[str]]
) -> None:
    for why, ids in skipped.items():
        model_admin.message_user(request, f"Not forgotten, {why}: {_named(ids)}.", messages.WARNING)
