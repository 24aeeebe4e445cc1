"""Admin for todos (sources, rules and events: ``todos.intake.admin``, registered from here).

Todos are read-only here: ``todos.lifecycle`` is their only writer, so the admin offers its
operator transitions (retry, cancel) as actions and nothing else, and Forget, whose writer is
``activity/forget.py`` (its body is the activity app's: ``activity/admin.py``).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern
from django.utils.safestring import SafeString

from attempts import admin as attempts_admin
from switchboard.lib.admin import (
    ReadOnlyAdmin,
    RefusesUnusableQueries,
    adopt,
    pretty_json,
    run_todo_action,
    under_todo_urls,
)
from switchboard.lib.errors import InvalidInput, LifecycleError
from switchboard.scope import Scope, acting_human
from todos import lifecycle, limits, schedules

# Django discovers each app's admin module only; intake's lives in the intake package.
from todos.intake import admin as intake_admin  # noqa: F401
from todos.models import PushAttempt, QueuePause, QueueSettings, Schedule, ScheduleRun, Todo
from todos.states import dead_letter_q

# Columns the todo list never shows: large, and loading them for a page of rows costs.
_HEAVY_TODO_COLUMNS = ("payload", "result", "routing_trace", "input_request", "work_order")


# --- todos -------------------------------------------------------------------------------------


class DeadLetterListFilter(admin.SimpleListFilter):
    """Failed with no retry scheduled: it runs again only if a human retries it."""

    title = "dead letter"
    parameter_name = "dead_letter"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "dead-lettered"), ("no", "not dead-lettered")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(dead_letter_q())
        if self.value() == "no":
            return queryset.exclude(dead_letter_q())
        return queryset


class LeanChangeList(ChangeList):
    """The todo list without its large JSON columns (the detail page still loads them)."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        return super().get_queryset(request, exclude_parameters).defer(*_HEAVY_TODO_COLUMNS)


def _owners(queryset: QuerySet[Todo]) -> list[tuple[str, int | None, int | None]]:
    """Each todo's id with its endpoint's owner and team (one of the two is set)."""
    return list(queryset.values_list("id", "endpoint__owner_id", "endpoint__team_id"))


@admin.register(Todo)
class TodoAdmin(RefusesUnusableQueries, admin.ModelAdmin):
    change_list_template = "admin/todos/todo/change_list.html"
    list_display = (
        "id",
        "title",
        "endpoint",
        "queue",
        "state",
        "budget",
        "attempts_total",
        "created_at",
        "dead_letter",
    )
    list_select_related = ("endpoint",)
    list_filter = ("state", DeadLetterListFilter, "queue", "endpoint")
    search_fields = ("=id", "title")
    date_hierarchy = "created_at"
    show_full_result_count = False  # a count of the whole table on every page view is a scan
    actions = ("retry_todos", "cancel_todos", "forget_todos")
    fieldsets = (
        (None, {"fields": ("id", "title", "endpoint", "queue", "state", "dead_letter")}),
        (
            "Lease and budget",
            {
                "fields": (
                    "owner",
                    "assignee",
                    "claimed_at",
                    "lease_expires_at",
                    "attempt",
                    "max_attempts",
                    "attempts_total",
                    "attempts_pruned",
                    "next_retry_at",
                )
            },
        ),
        (
            "Work",
            {
                "fields": (
                    "event",
                    "payload_json",
                    "work_order",
                    "result_json",
                    "input_request_json",
                    "routing_trace_json",
                )
            },
        ),
        (
            "Times",
            {
                "fields": (
                    "created_at",
                    "updated_at",
                    "finished_at",
                    "last_ringed_at",
                    "ring_attempts",
                )
            },
        ),
    )
    readonly_fields = (
        "id",
        "title",
        "endpoint",
        "queue",
        "state",
        "dead_letter",
        "owner",
        "assignee",
        "claimed_at",
        "lease_expires_at",
        "attempt",
        "max_attempts",
        "attempts_total",
        "attempts_pruned",
        "next_retry_at",
        "event",
        "payload_json",
        "work_order",
        "result_json",
        "input_request_json",
        "routing_trace_json",
        "created_at",
        "updated_at",
        "finished_at",
        "last_ringed_at",
        "ring_attempts",
    )
    inlines = (attempts_admin.TodoAttemptInline,)

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return LeanChangeList

    def get_urls(self) -> list[URLPattern]:
        # The attempts, activity and span lists live under this admin's URLs: their models
        # cannot be registered (composite primary keys). The apps above todos add theirs when
        # the admin autodiscovers them (``serve_under_todo``), so this module imports neither.
        return [
            *attempts_admin.urls(self.admin_site),
            *under_todo_urls(self.admin_site),
            *super().get_urls(),
        ]

    # Read-only: the lifecycle is the only writer -----------------------------------------------

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the retention sweep deletes todos, with their attempts and activity

    def has_operate_permission(self, request: HttpRequest) -> bool:
        # The actions run operator transitions, not field edits: they need the change
        # permission the edit form is never offered under.
        return request.user.has_perm("todos.change_todo")

    # Columns -------------------------------------------------------------------------------------

    @admin.display(description="attempt", ordering="attempt")
    def budget(self, obj: Todo) -> str:
        return f"{obj.attempt}/{obj.max_attempts}"

    @admin.display(description="dead letter", boolean=True)
    def dead_letter(self, obj: Todo) -> bool:
        return obj.dead_letter

    @admin.display(description="payload")
    def payload_json(self, obj: Todo) -> SafeString:
        return pretty_json(obj.payload)

    @admin.display(description="result")
    def result_json(self, obj: Todo) -> SafeString:
        return pretty_json(obj.result)

    @admin.display(description="input request")
    def input_request_json(self, obj: Todo) -> SafeString:
        return pretty_json(obj.input_request)

    @admin.display(description="routing trace")
    def routing_trace_json(self, obj: Todo) -> SafeString:
        return pretty_json(obj.routing_trace)

    # Operator transitions ----------------------------------------------------------------------
    # The admin acts as the endpoint's owner: the operator transitions are scoped to the human
    # who owns the todo (for a team's, one of its admins: scope.acting_human), and a superuser's
    # reach is every owner's. The activity names the staff member who acted.

    @admin.action(
        description="Retry the selected todos (back to pending, fresh budget)",
        permissions=["operate"],
    )
    def retry_todos(self, request: HttpRequest, queryset: QuerySet[Todo]) -> None:
        done = 0
        for todo_id, owner_id, team_id in _owners(queryset):
            try:
                lifecycle.retry(
                    acting_human(owner_id, team_id) or 0, todo_id, actor_id=request.user.pk
                )
            except LifecycleError as exc:
                self.message_user(request, f"Not retried: {exc}", messages.WARNING)
            else:
                done += 1
        if done:
            self.message_user(request, f"Retried {_todos(done)}.", messages.SUCCESS)

    @admin.action(description="Cancel the selected todos", permissions=["operate"])
    def cancel_todos(self, request: HttpRequest, queryset: QuerySet[Todo]) -> None:
        done = 0
        reason = f"Canceled in the admin by {request.user.get_username()}"
        for todo_id, owner_id, team_id in _owners(queryset):
            try:
                lifecycle.cancel(
                    Scope.of_human(acting_human(owner_id, team_id) or 0),
                    todo_id,
                    reason=reason,
                    actor_id=request.user.pk,
                )
            except LifecycleError as exc:
                self.message_user(request, f"Not canceled: {exc}", messages.WARNING)
            else:
                done += 1
        if done:
            self.message_user(request, f"Canceled {_todos(done)}.", messages.SUCCESS)

    @admin.action(
        description="Forget the selected finished todos (erase their content; asks first)",
        permissions=["operate"],
    )
    def forget_todos(self, request: HttpRequest, queryset: QuerySet[Todo]) -> HttpResponse | None:
        # The writer, activity/forget.py, sits above the todos package, which imports no app
        # above it: the activity app registers this action's body (activity/admin.py).
        return run_todo_action("forget", self, request, queryset)


def _todos(n: int) -> str:
    return f"{n} todo{'' if n == 1 else 's'}"


@admin.register(PushAttempt)
class PushAttemptAdmin(ReadOnlyAdmin):
    """Push rings, read-only: queued by rings and sent by the sweeper (``todos/push.py``)."""

    list_display = ("created_at", "endpoint", "reason", "todo_id", "state", "tries", "status_code")
    list_filter = ("state", "reason")
    list_select_related = ("endpoint",)
    search_fields = ("todo__id", "ring_id")
    readonly_fields = tuple(f.name for f in PushAttempt._meta.fields)


@admin.register(QueuePause)
class QueuePauseAdmin(ReadOnlyAdmin):
    """Queue pauses, read-only: open while ``resumed_at`` is empty. Paused and resumed through
    ``todos.lifecycle`` (the Board's list, ``manage.py queue``), never here."""

    list_display = ("endpoint", "queue", "paused_at", "paused_by", "resumed_at", "resumed_by")
    list_filter = (("resumed_at", admin.EmptyFieldListFilter),)
    list_select_related = ("endpoint",)
    search_fields = ("queue", "endpoint__slug")
    readonly_fields = tuple(f.name for f in QueuePause._meta.fields)


# --- schedules -------------------------------------------------------------------------------


class ScheduleForm(forms.ModelForm):
    """The writer's checks, shown on their fields; saving goes through ``todos.schedules``."""

    class Meta:
        model = Schedule
        fields = (
            "endpoint",
            "queue",
            "cron",
            "timezone",
            "title_template",
            "payload_template",
            "work_order_template",
            "missed",
            "priority",
            "start_within_seconds",
            "finish_within_seconds",
            "run_timeout_seconds",
            "max_attempts",
        )

    # The writer's field names, as InvalidInput reports them, to the form's.
    FIELD = {
        "title": "title_template",
        "payload": "payload_template",
        "work_order": "work_order_template",
        "start_within": "start_within_seconds",
        "finish_within": "finish_within_seconds",
    }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            endpoint = data.get("endpoint") or self.instance.endpoint
            if endpoint.revoked_at is not None and not self.instance.pk:
                raise InvalidInput("endpoint", "is revoked; todos for it are refused")
            schedules.check(
                **{
                    self.FIELD_ARG.get(column, column): data.get(column)
                    for column in ScheduleForm.Meta.fields
                    if column != "endpoint"
                }
            )
        except InvalidInput as exc:
            field = self.FIELD.get(exc.field, exc.field)
            message = str(exc).removeprefix(f"{exc.field}: ")
            self.add_error(field if field in self.fields else None, message)
        return data

    FIELD_ARG = {column: arg for arg, column in FIELD.items()}


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    """Cron schedules, written through ``todos.schedules`` as on the Board and the command."""

    form = ScheduleForm
    list_display = ("id", "endpoint", "queue", "cron", "timezone", "enabled", "next_run_at")
    list_filter = ("enabled", "missed")
    list_select_related = ("endpoint",)
    search_fields = ("queue", "endpoint__slug", "title_template")
    readonly_fields = (
        "enabled",
        "next_run_at",
        "last_run_at",
        "created_by",
        "created_at",
        "recent_runs",
    )
    autocomplete_fields = ("endpoint",)
    actions = ("pause_schedules", "resume_schedules", "run_schedules_now")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # The endpoint is fixed at creation, as everywhere.
        return (*self.readonly_fields, "endpoint") if obj else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Schedule, form: Any, change: bool) -> None:
        data = form.cleaned_data
        values = {
            ScheduleForm.FIELD_ARG.get(column, column): data[column]
            for column in ScheduleForm.Meta.fields
            if column != "endpoint"
        }
        if change:
            saved = schedules.update(obj, **values)
        else:
            # Staff act over every endpoint, as manage.py does without --as: no owner check.
            saved = schedules.add(data["endpoint"], **values)
        adopt(obj, saved)

    @admin.display(description="last runs")
    def recent_runs(self, obj: Schedule) -> str:
        """The newest runs, read-only: the fire step writes them."""
        runs = obj.runs.all()[:10] if obj.pk else []
        return "; ".join(
            f"{run.tick:%Y-%m-%d %H:%M} → {run.todo_id or run.error or 'deleted'}" for run in runs
        )

    def delete_model(self, request: HttpRequest, obj: Schedule) -> None:
        schedules.remove(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        schedules.remove_many(queryset)

    @admin.action(description="Pause the selected schedules")
    def pause_schedules(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        done = sum(schedules.pause(s) for s in queryset)
        self.message_user(request, f"Paused {done} schedule(s).")

    @admin.action(description="Resume the selected schedules")
    def resume_schedules(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        done, refused = 0, []
        for schedule in queryset:
            try:
                done += schedules.resume(schedule)
            except InvalidInput as exc:
                refused.append(f"schedule {schedule.pk}: {exc}")
        self.message_user(request, f"Resumed {done} schedule(s).")
        if refused:
            self.message_user(
                request, f"Not resumed (edit them first): {'; '.join(refused)}.", messages.ERROR
            )

    @admin.action(description="Run the selected schedules now")
    def run_schedules_now(self, request: HttpRequest, queryset: QuerySet[Schedule]) -> None:
        for schedule in queryset:
            try:
                run = schedules.run_now(schedule)
            except InvalidInput as exc:
                self.message_user(request, f"{schedule}: {exc}", messages.ERROR)
            else:
                self.message_user(request, f"{schedule}: created {run.todo_id}.")


@admin.register(ScheduleRun)
class ScheduleRunAdmin(ReadOnlyAdmin):
    """Schedules' runs, read-only: written by the fire step and run-now (``todos/schedules.py``)."""

    list_display = ("schedule", "tick", "fired_at", "todo_id", "ticks", "error")
    list_select_related = ("schedule",)
    list_filter = ("schedule",)
    readonly_fields = tuple(f.name for f in ScheduleRun._meta.fields)


# The queue's settings the admin edits, as set_queue_limits names them.
LIMITS = (
    "max_in_flight",
    "claims_per_minute",
    "run_timeout_seconds",
    "default_max_cost_usd",
    "daily_budget_usd",
)


def _limit(label: str, help_text: str, inputmode: str = "numeric") -> forms.CharField:
    # Text, read as the Board's queue page reads it (lifecycle.limit_from_text), not by
    # Django's number fields, which take digits the Board refuses ("٣") and say it otherwise.
    return forms.CharField(
        label=label,
        required=False,
        help_text=help_text,
        widget=forms.TextInput(attrs={"inputmode": inputmode, "autocomplete": "off"}),
    )


class QueueSettingsForm(forms.ModelForm):
    """Each limit and amount checked as the Board's queue page checks it
    (``lifecycle.limit_from_text``: ``check_limit``'s bounds, ``limits.check_cost``'s amounts),
    the refusal named on its field; blank clears one."""

    max_in_flight = _limit(
        "Max in flight", "No agent's claim takes a todo of the queue while this many are held."
    )
    claims_per_minute = _limit(
        "Claims per minute", "The agents' claims of the queue, a bucket refilled continuously."
    )
    run_timeout_seconds = _limit(
        "Default run timeout (seconds)", "The run timeout of the queue's todos that set none."
    )
    default_max_cost_usd = _limit(
        "Default cost cap of a todo (USD)",
        "What a todo of the queue created without a cap may cost; past it, the todo fails.",
        "decimal",
    )
    daily_budget_usd = _limit(
        "Daily budget (USD a UTC day)",
        "What the queue's model calls may cost in a UTC day; past it the queue pauses until"
        " the next.",
        "decimal",
    )

    class Meta:
        model = QueueSettings
        fields = ("endpoint", "queue", *LIMITS)

    def clean_queue(self) -> str:
        # On add only (read-only once made): the writer checks the name again and would raise.
        try:
            return limits.check_queue(self.cleaned_data.get("queue"))
        except InvalidInput as exc:
            raise forms.ValidationError(str(exc).split(": ", 1)[1]) from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        for field in LIMITS:
            if field in self.errors:
                continue
            try:
                data[field] = lifecycle.limit_from_text(field, data.get(field) or "")
            except InvalidInput as exc:
                self.add_error(field, str(exc).split(": ", 1)[1])
        return data


@admin.register(QueueSettings)
class QueueSettingsAdmin(admin.ModelAdmin):
    """Queue limits (docs/decisions/0028-queue-limits.md) and cost defaults and budget
    (docs/decisions/0036-cost-and-budgets.md), saved through
    ``todos.lifecycle.set_queue_limits`` as the Board and ``manage.py queue set`` save them,
    recorded as the endpoint's owner's change made by this staff member. A row is kept once
    made: blank limits are no limits."""

    form = QueueSettingsForm
    list_display = (
        "endpoint",
        "queue",
        "max_in_flight",
        "claims_per_minute",
        "run_timeout_seconds",
        "default_max_cost_usd",
        "daily_budget_usd",
        "updated_at",
        "updated_by",
    )
    list_select_related = ("endpoint",)
    search_fields = ("queue", "endpoint__slug")
    readonly_fields = ("tokens", "refilled_at", "updated_at", "updated_by")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        # The row's key is fixed once made: another queue is another row. A row not yet made
        # has no bucket and no update to show: its tokens, refill and update times are the
        # database's defaults, which only the insert computes (rendering them raised).
        if obj is None:
            return ()
        return ("endpoint", "queue", *self.readonly_fields)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def save_model(self, request: HttpRequest, obj: QueueSettings, form: Any, change: bool) -> None:
        done = lifecycle.set_queue_limits(
            obj.endpoint_id,
            obj.queue,
            human_id=acting_human(obj.endpoint.owner_id, obj.endpoint.team_id) or 0,
            actor_id=request.user.pk,
            **{field: form.cleaned_data[field] for field in LIMITS},
        )
        obj.pk = QueueSettings.objects.get(endpoint_id=done.endpoint_id, queue=done.queue).pk
