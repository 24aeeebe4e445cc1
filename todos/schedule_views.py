"""The Board's schedules: the list, a schedule's page (its next five runs, its last runs with
their todos), creation with the writer's errors by field, pause/resume, run now, remove.

Every read and action is scoped to the schedules of the endpoints the logged-in human sees, its
own and its teams' (``schedules.visible`` / ``get_visible``, over ``switchboard/scope.py``):
every member of an endpoint's team sees, pauses, runs and removes its schedules. Anyone else's
schedule answers 404 exactly like an unknown one, staff included, and nothing changes. Every
write goes through ``todos.schedules``, so the Board holds schedules to the same checks as the
admin and ``manage.py schedule``.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import available_timezones

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from switchboard.lib import jsonlimits
from switchboard.lib.errors import InvalidInput
from switchboard.lib.guards import BoardRequest, confirmed, login_required
from switchboard.lib.notfound import ON_YOUR_ENDPOINTS, NotFound
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import schedules
from todos.models import MissedPolicy, Schedule
from todos.present import pretty

# The writer names fields as add() does; the form's names are the same, bar these.
_FORM_FIELD = {"start_within": "start_within", "finish_within": "finish_within"}


class ScheduleForm(forms.Form):
    endpoint = forms.ChoiceField(help_text="The endpoint whose queue gets the todos.")
    queue = forms.CharField(max_length=128, strip=False)
    cron = forms.CharField(
        max_length=200,
        help_text="Five fields: minute hour day-of-month month day-of-week, e.g. 0 9 * * 1-5.",
    )
    timezone = forms.CharField(
        initial="UTC", max_length=64, help_text="The cron's wall clock, e.g. Europe/Berlin."
    )
    title = forms.CharField(
        max_length=1024,
        help_text="The todos' title; {tick}, {date}, {time} and {schedule} are filled in.",
    )
    payload = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="A JSON object (empty for {}); its strings take the same names.",
    )
    work_order = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    missed = forms.ChoiceField(
        choices=[
            (MissedPolicy.SKIP, "skip: create nothing for ticks missed while no sweeper ran"),
            (MissedPolicy.RUN_ONCE, "run once: one todo for all the missed ticks"),
        ],
        initial=MissedPolicy.SKIP,
        label="Missed ticks",
    )
    max_attempts = forms.IntegerField(initial=5)

    def __init__(self, endpoints: list[Endpoint], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.endpoints = {e.slug: e for e in endpoints}
        field = self.fields["endpoint"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [(e.slug, f"{e.slug} ({e.name})" if e.name else e.slug) for e in endpoints]

    def clean_payload(self) -> Any:
        text = self.cleaned_data["payload"].strip()
        if not text:
            return None
        try:
            return jsonlimits.loads(text)
        except ValueError as exc:
            raise forms.ValidationError(f"Not JSON: {exc}") from None

    def save(self, request: BoardRequest) -> Schedule | None:
        """Add the schedule through the writer; its refusal lands on the field it names."""
        data = self.cleaned_data
        try:
            return schedules.add(
                self.endpoints[data["endpoint"]],
                queue=data["queue"],
                cron=data["cron"],
                title=data["title"],
                timezone=data["timezone"].strip(),
                payload=data["payload"],
                work_order=data["work_order"],
                missed=data["missed"],
                max_attempts=data["max_attempts"],
                by=request.user,
            )
        except InvalidInput as exc:
            field = _FORM_FIELD.get(exc.field, exc.field)
            message = str(exc).removeprefix(f"{exc.field}: ")
            self.add_error(field if field in self.fields else None, message)
            return None


def _own(request: BoardRequest, schedule_id: int) -> Schedule:
    try:
        return schedules.get_visible(request.user, schedule_id)
    except InvalidInput:
        raise NotFound(
            "Schedule", f"#{schedule_id}", section="schedules", why=ON_YOUR_ENDPOINTS
        ) from None


@login_required
@require_GET
def schedule_list(request: BoardRequest) -> HttpResponse:
    """The human's schedules, in one query."""
    rows = schedules.visible(request.user).order_by("endpoint__slug", "queue", "id")
    return render(
        request, "schedules/schedule_list.html", {"section": "schedules", "schedules": rows}
    )


@login_required
@require_http_methods(["GET", "POST"])
def schedule_new(request: BoardRequest) -> HttpResponse:
    endpoints = list(
        Endpoint.objects.filter(Scope.of_human(request.user.id).endpoints())
        .active()
        .order_by("slug")
    )
    form = ScheduleForm(endpoints, request.POST or None)
    if request.method == "POST" and form.is_valid():
        schedule = form.save(request)
        if schedule is not None:
            messages.success(request, f"Added schedule {schedule.pk}.")
            return redirect("schedule_detail", schedule_id=schedule.pk)
    return render(
        request,
        "schedules/schedule_new.html",
        {"section": "schedules", "form": form, "timezones": sorted(available_timezones())},
    )


@login_required
@require_GET
def schedule_detail(request: BoardRequest, schedule_id: int) -> HttpResponse:
    schedule = _own(request, schedule_id)
    runs = schedule.runs.select_related("todo").only(
        "tick", "fired_at", "ticks", "error", "todo__id", "todo__state", "todo__title"
    )[:20]
    upcoming = [schedules.local_iso(t, schedule.timezone) for t in schedules.upcoming(schedule)]
    context = {
        "section": "schedules",
        "schedule": schedule,
        "runs": runs,
        "upcoming": upcoming,
        # Indented JSON as the todo pages show a payload (autoescaped where rendered).
        "payload_json": pretty(schedule.payload_template),
    }
    return render(request, "schedules/schedule_detail.html", context)


@login_required
@require_POST
def schedule_action(request: BoardRequest, schedule_id: int, action: str) -> HttpResponse:
    """Pause, resume or run now; each says what it changed."""
    schedule = _own(request, schedule_id)
    if action == "pause":
        done = schedules.pause(schedule)
        messages.success(request, "Paused." if done else "It was paused already.")
    elif action == "resume":
        try:
            done = schedules.resume(schedule)
        except InvalidInput as exc:
            messages.error(request, f"Not resumed: {exc}. Edit the schedule first.")
        else:
            messages.success(request, "Resumed." if done else "It was not paused.")
    elif action == "run-now":
        try:
            run = schedules.run_now(schedule)
        except InvalidInput as exc:
            messages.error(request, f"No todo created: {exc}")
        else:
            messages.success(request, f"Created {run.todo_id}.")
    else:
        raise Http404("no such action")
    return redirect("schedule_detail", schedule_id=schedule.pk)


@login_required
@require_http_methods(["GET", "POST"])
def schedule_remove(request: BoardRequest, schedule_id: int) -> HttpResponse:
    """Ask, then remove on a confirmed POST. The todos it created stay."""
    schedule = _own(request, schedule_id)
    if request.method == "POST" and confirmed(request):
        schedules.remove(schedule)
        messages.success(request, f"Removed schedule {schedule_id}.")
        return redirect("schedules")
    return render(
        request, "schedules/schedule_remove.html", {"section": "schedules", "schedule": schedule}
    )
