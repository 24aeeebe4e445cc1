"""Cron schedules that create todos: the only module that writes ``schedules`` and
``schedule_runs`` (docs/decisions/0029-schedules.md).

The admin, the Board and ``manage.py schedule`` call ``add``, ``update``, ``pause``, ``resume``,
``run_now`` and ``remove``; the sweeper calls ``fire_due``. Todos are created through
``todos.lifecycle.create`` only. Bad input raises ``InvalidInput`` naming the field; nothing is
half-written.

Exactly once, whatever the number of sweepers
---------------------------------------------
``fire_due`` fires one schedule per transaction: it locks the most overdue enabled schedule
``FOR UPDATE SKIP LOCKED`` (``schedule_due.sql``), moves its ``next_run_at`` past the tick with a
conditional UPDATE that matches only while ``next_run_at`` is still the tick it read
(``schedule_advance.sql``), creates the todo and records the run, and commits all three
together. A second sweeper skips the locked row; had it read the row before, its UPDATE
re-checks ``next_run_at`` against the committed row and matches nothing, so it creates nothing.
Behind both, ``schedule_runs_once`` (one run per schedule and tick) refuses a second run of a
tick at the database, rolling its todo back with it.

Ticks
-----
Cron expressions are read by ``cronsim`` in the schedule's time zone (``zoneinfo``), which
handles daylight-saving changes as cron does: a wall-clock time that does not exist that day
fires at the first minute after the gap, one that repeats fires once. A tick is *missed* when
the one after it has passed too, or when it is more than ``MISSED_AFTER_SECONDS`` late (the
sweeper was down). ``skip`` then records the skipped ticks and creates nothing; ``run_once``
creates one todo, for the latest passed tick, standing for all of them. Either way the schedule
jumps to the first tick after now.

Templates
---------
The title, the work order and the payload's string values are ``str.format`` templates with a
closed set of names (``TEMPLATE_NAMES``), all plain strings. A field with an attribute, an
index, a conversion or a format spec is refused when the schedule is saved (and checked again
when it renders): no attribute access, no padding to a gigabyte.
"""

from __future__ import annotations

import datetime as dt
import json
import string
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone as django_timezone

from switchboard.lib import jsonlimits
from switchboard.lib.errors import InvalidInput
from switchboard.lib.sql import fetch_one, load
from switchboard.lib.text import cut_utf8
from switchboard.models import Endpoint, Human
from switchboard.scope import Scope
from todos import lifecycle, limits
from todos.models import MissedPolicy, Schedule, ScheduleRun

_SQL = Path(__file__).parent / "sql"
SCHEDULE_DUE = load(_SQL, "schedule_due")
SCHEDULE_ADVANCE = load(_SQL, "schedule_advance")

CRON_MAX_BYTES = 200
TIMEZONE_MAX_BYTES = 64
WITHIN_MAX_SECONDS = 366 * 24 * 3600  # deadlines relative to the tick: at most a year after it
# A tick later than this is missed even when the next tick has not passed yet (a daily
# schedule whose sweeper was down for hours); the sweeper runs every few seconds.
MISSED_AFTER_SECONDS = 300
MISSED_COUNT_MAX = 10_000  # missed ticks counted one by one at most; past it, jump from now
RUNS_KEPT = 50  # runs kept per schedule: the Board shows the newest
TEMPLATE_NAMES = frozenset({"tick", "date", "time", "schedule"})


@dataclass(frozen=True, slots=True)
class Fired:
    """What the fire step did with one due schedule."""

    schedule_id: int
    tick: dt.datetime
    todo_id: str | None
    ticks: int  # how many passed ticks this stood for
    skipped: bool  # missed ticks skipped: no todo
    error: str  # why the todo was refused (endpoint revoked, …); empty when created


# --- checks ----------------------------------------------------------------------------------


def check_timezone(value: Any) -> ZoneInfo:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("timezone", "must be a time zone name such as Europe/Berlin or UTC")
    if len(value.encode()) > TIMEZONE_MAX_BYTES:
        raise InvalidInput("timezone", f"must be at most {TIMEZONE_MAX_BYTES} bytes")
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidInput("timezone", f"unknown time zone {value!r} ({exc})") from None


def check_cron(value: Any, zone: ZoneInfo, now: dt.datetime | None = None) -> str:
    """A five-field cron expression ``cronsim`` reads and that fires at least once; return it
    with its spaces made single."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("cron", "must be a cron expression such as '*/5 * * * *'")
    expr = " ".join(value.split())
    if len(expr.encode()) > CRON_MAX_BYTES:
        raise InvalidInput("cron", f"must be at most {CRON_MAX_BYTES} bytes")
    # cronsim also reads a sixth field, seconds, first: a schedule firing every second would
    # create a todo on every sweeper pass.
    if len(expr.split()) != 5:
        raise InvalidInput(
            "cron", "must have five fields: minute, hour, day of month, month, day of week"
        )
    try:
        next(CronSim(expr, (now or django_timezone.now()).astimezone(zone)))
    except CronSimError as exc:
        raise InvalidInput("cron", f"{exc}") from None
    except StopIteration:
        raise InvalidInput("cron", "never fires") from None
    return expr


def check_template(field: str, value: Any, max_bytes: int | None = None) -> str:
    """A ``str.format`` template using only ``TEMPLATE_NAMES``, plain (no attribute, index,
    conversion or format spec)."""
    if not isinstance(value, str):
        raise InvalidInput(field, "must be a string")
    if max_bytes is not None and len(value.encode()) > max_bytes:
        raise InvalidInput(field, f"must be at most {max_bytes} bytes")
    try:
        parts = list(string.Formatter().parse(value))
    except ValueError as exc:
        raise InvalidInput(
            field, f"is not a valid template ({exc}); write {{{{ for a brace"
        ) from None
    names = ", ".join("{" + name + "}" for name in sorted(TEMPLATE_NAMES))
    for _literal, name, spec, conversion in parts:
        if name is None:
            continue
        if name not in TEMPLATE_NAMES or spec or conversion:
            raise InvalidInput(field, f"may use only {names}, as they are; not {{{name}}}")
    return value


def _check_payload(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput("payload", "must be a JSON object")
    if (reason := jsonlimits.problem(value)) is not None:
        raise InvalidInput("payload", reason)

    def walk(node: Any) -> None:
        if isinstance(node, str):
            check_template("payload", node)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(value)
    return value


def _check_int(field: str, value: Any, low: int, high: int, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(field, "must be an integer")
    if not low <= value <= high:
        raise InvalidInput(field, f"must be between {low} and {high}")
    return value


def _check_missed(value: Any) -> str:
    if value not in MissedPolicy.values:
        raise InvalidInput("missed", f"must be one of {', '.join(MissedPolicy.values)}")
    return str(value)


def _check_endpoint(endpoint: Endpoint, by: Human | None) -> None:
    # Unknown and foreign read alike, as everywhere in the Board; a team's endpoint is every
    # member's (switchboard/scope.py).
    seen = Endpoint.objects.filter(pk=endpoint.pk)
    if by is not None and not seen.filter(Scope.of_human(by.pk).endpoints()).exists():
        raise InvalidInput("endpoint", "unknown endpoint")
    if endpoint.revoked_at is not None:
        raise InvalidInput("endpoint", "is revoked; todos for it are refused")


_FIELDS = (
    "queue",
    "title_template",
    "payload_template",
    "work_order_template",
    "priority",
    "start_within_seconds",
    "finish_within_seconds",
    "run_timeout_seconds",
    "max_attempts",
    "cron",
    "timezone",
    "missed",
)


# The names add() takes for the stored fields, where they differ.
_ARG_NAMES = {
    "title_template": "title",
    "payload_template": "payload",
    "work_order_template": "work_order",
    "start_within_seconds": "start_within",
    "finish_within_seconds": "finish_within",
}


def _checked(values: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of ``values`` checked, in the form the table stores (field names as the
    surfaces name them: ``title``, ``payload``, ``work_order``)."""
    zone = check_timezone(values["timezone"])
    queue = limits.check_queue(values["queue"])
    if queue != queue.strip():
        raise InvalidInput("queue", "must not have spaces around it")
    checked = {
        "queue": queue,
        "title_template": check_template("title", values["title_template"], limits.TITLE_MAX_BYTES),
        "payload_template": _check_payload(values["payload_template"]),
        "work_order_template": check_template("work_order", values["work_order_template"] or ""),
        "priority": _check_int(
            "priority", values["priority"], limits.PRIORITY_MIN, limits.PRIORITY_MAX
        ),
        "start_within_seconds": _check_int(
            "start_within", values["start_within_seconds"], 1, WITHIN_MAX_SECONDS, optional=True
        ),
        "finish_within_seconds": _check_int(
            "finish_within", values["finish_within_seconds"], 1, WITHIN_MAX_SECONDS, optional=True
        ),
        "run_timeout_seconds": _check_int(
            "run_timeout_seconds",
            values["run_timeout_seconds"],
            limits.RUN_TIMEOUT_MIN_SECONDS,
            limits.RUN_TIMEOUT_MAX_SECONDS,
            optional=True,
        ),
        "max_attempts": _check_int(
            "max_attempts", values["max_attempts"], 1, limits.MAX_ATTEMPTS_LIMIT
        ),
        "cron": check_cron(values["cron"], zone),
        "timezone": values["timezone"],
        "missed": _check_missed(values["missed"]),
    }
    # Each tick's todo must start by its finish: a start window longer than the finish window
    # would be refused at every tick (lifecycle.create: start_by after finish_by).
    start, finish = checked["start_within_seconds"], checked["finish_within_seconds"]
    if start is not None and finish is not None and start > finish:
        raise InvalidInput("start_within", "must not be longer than finish_within")
    return checked


def check(**fields: Any) -> dict[str, Any]:
    """Check a schedule's fields, named as ``add`` names them (all of them); return them as the
    table stores them, or raise ``InvalidInput`` naming the first bad one. Forms call it to
    show the error in place; ``add`` and ``update`` call it again."""
    names = {_ARG_NAMES.get(column, column): column for column in _FIELDS}
    if set(fields) != set(names):
        raise TypeError(f"check() takes exactly {sorted(names)}")
    return _checked({names[name]: value for name, value in fields.items()})


# --- ticks -----------------------------------------------------------------------------------


def next_ticks(cron: str, zone_name: str, after: dt.datetime, count: int = 1) -> list[dt.datetime]:
    """The schedule's next ``count`` ticks strictly after ``after``, in UTC."""
    ticks = []
    it = CronSim(cron, after.astimezone(ZoneInfo(zone_name)))
    for _ in range(count):
        try:
            ticks.append(next(it).astimezone(dt.UTC))
        except StopIteration:
            break
    return ticks


def upcoming(schedule: Schedule, count: int = 5) -> list[dt.datetime]:
    """The next ``count`` runs of ``schedule`` from now (from its next run when enabled)."""
    now = django_timezone.now()
    first = schedule.next_run_at if schedule.enabled and schedule.next_run_at else None
    if first is None:
        return next_ticks(schedule.cron, schedule.timezone, now, count)
    return [first, *next_ticks(schedule.cron, schedule.timezone, first, count - 1)]


def local_iso(instant: dt.datetime | None, zone_name: str) -> str:
    """``instant`` as the schedule's wall clock reads it, with its offset ("" for None)."""
    return "" if instant is None else instant.astimezone(ZoneInfo(zone_name)).isoformat()


def _first_after(cron: str, zone_name: str, after: dt.datetime) -> dt.datetime:
    ticks = next_ticks(cron, zone_name, after)
    if not ticks:  # checked at save; a schedule whose cron stopped firing is far-future
        return dt.datetime.max.replace(tzinfo=dt.UTC) - dt.timedelta(days=1)
    return ticks[0]


# --- templates -------------------------------------------------------------------------------


def template_context(schedule_id: int, tick: dt.datetime, zone_name: str) -> dict[str, str]:
    local = tick.astimezone(ZoneInfo(zone_name))
    return {
        "tick": local.isoformat(),
        "date": local.date().isoformat(),
        "time": local.strftime("%H:%M"),
        "schedule": str(schedule_id),
    }


def render(field: str, template: str, context: Mapping[str, str]) -> str:
    """``template`` with its names filled from ``context`` (checked again: the row could have
    been written before a check existed)."""
    return check_template(field, template).format_map(context)


def _render_payload(node: Any, context: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return render("payload", node, context)
    if isinstance(node, dict):
        return {key: _render_payload(value, context) for key, value in node.items()}
    if isinstance(node, list):
        return [_render_payload(value, context) for value in node]
    return node


def _time_fields(row: Mapping[str, Any], tick: dt.datetime) -> dict[str, Any]:
    """The todo's time fields for the run at ``tick``; deadlines count from the tick."""

    def after(seconds: int | None) -> dt.datetime | None:
        return None if seconds is None else tick + dt.timedelta(seconds=seconds)

    return {
        "priority": row["priority"],
        "start_by": after(row["start_within_seconds"]),
        "finish_by": after(row["finish_within_seconds"]),
        "run_timeout_seconds": row["run_timeout_seconds"],
        "dedupe_key": f"schedule:{row['id']}:{tick.astimezone(dt.UTC).isoformat()}",
    }


def _create_todo(row: Mapping[str, Any], tick: dt.datetime) -> tuple[str | None, str]:
    """Create the run's todo inside the caller's transaction; (todo id, "") or (None, why)."""
    context = template_context(row["id"], tick, row["timezone"])
    payload = row["payload_template"]
    if isinstance(payload, str):  # Django's connection reads jsonb as its text
        payload = json.loads(payload)
    try:
        title, _cut = cut_utf8(
            render("title", row["title_template"], context), limits.TITLE_MAX_BYTES
        )
        fields = {
            "queue": row["queue"],
            "title": title,
            "payload": _render_payload(payload, context),
            "work_order": render("work_order", row["work_order_template"], context),
            "max_attempts": row["max_attempts"],
        }
        fields |= _time_fields(row, tick)
        with transaction.atomic():  # a savepoint: a refused todo leaves the run recorded
            todo = lifecycle.create(row["endpoint_id"], **fields)
    except InvalidInput as exc:
        return None, str(exc)
    return todo.id, ""


def _record(
    schedule_id: int, tick: dt.datetime, todo_id: str | None, ticks: int, error: str
) -> None:
    ScheduleRun.objects.create(
        schedule_id=schedule_id, tick=tick, todo_id=todo_id, ticks=ticks, error=error
    )
    stale = ScheduleRun.objects.filter(schedule_id=schedule_id).values_list("id", flat=True)[
        RUNS_KEPT:
    ]
    if stale:
        ScheduleRun.objects.filter(id__in=list(stale)).delete()


# --- the fire step ---------------------------------------------------------------------------


def _fire_one(row: Mapping[str, Any]) -> Fired | None:
    """Fire the locked due schedule ``row`` in the caller's transaction; None if it lost."""
    now: dt.datetime = row["now"]
    due: dt.datetime = row["next_run_at"]
    it = CronSim(row["cron"], due.astimezone(ZoneInfo(row["timezone"])))
    latest, ticks = due, 1
    following = _next_or_none(it)
    while following is not None and following <= now and ticks < MISSED_COUNT_MAX:
        latest, ticks = following, ticks + 1
        following = _next_or_none(it)
    if following is None or following <= now:  # too many to count: jump from the clock
        following = _first_after(row["cron"], row["timezone"], now)
    missed = ticks > 1 or (now - due).total_seconds() > MISSED_AFTER_SECONDS
    skipped = missed and row["missed"] == MissedPolicy.SKIP
    tick = due if skipped else latest
    advanced = fetch_one(
        SCHEDULE_ADVANCE,
        {"id": row["id"], "due": due, "next": following, "fired": None if skipped else tick},
    )
    if advanced is None:
        return None
    if skipped:
        todo_id, error = None, f"skipped {ticks} missed tick{'s' if ticks > 1 else ''}"
    else:
        todo_id, error = _create_todo(row, tick)
    _record(row["id"], tick, todo_id, ticks, error)
    return Fired(row["id"], tick, todo_id, ticks, skipped, "" if skipped else error)


def _next_or_none(it: CronSim) -> dt.datetime | None:
    try:
        return next(it).astimezone(dt.UTC)
    except StopIteration:
        return None


def fire_due(now: dt.datetime | None = None, limit: int = limits.SWEEP_BATCH) -> list[Fired]:
    """Fire every due tick once, each schedule in its own transaction; return what fired.

    ``now`` is the clock to fire by (the database's when None; tests pass one to run the clock
    forward). Safe to run in any number of processes at once (the module docstring says why).
    """
    fired: list[Fired] = []
    for _ in range(limit):
        with transaction.atomic():
            row = fetch_one(SCHEDULE_DUE, {"now": now})
            if row is None:
                break
            result = _fire_one(row)
        if result is not None:
            fired.append(result)
    return fired


# --- the writer --------------------------------------------------------------------------------


def add(
    endpoint: Endpoint,
    *,
    queue: str,
    cron: str,
    title: str,
    timezone: str = "UTC",
    payload: Any = None,
    work_order: str = "",
    missed: str = MissedPolicy.SKIP,
    priority: int = 0,
    start_within: int | None = None,
    finish_within: int | None = None,
    run_timeout_seconds: int | None = None,
    max_attempts: int = 5,
    enabled: bool = True,
    by: Human | None = None,
) -> Schedule:
    """Create a schedule on ``endpoint``'s ``queue``; ``by`` (when given) must see the endpoint
    (own it, or be a member of its team).

    Raise ``InvalidInput`` naming the field for anything the fire step could not use.
    """
    _check_endpoint(endpoint, by)
    values = check(
        queue=queue,
        cron=cron,
        title=title,
        timezone=timezone,
        payload=payload,
        work_order=work_order,
        missed=missed,
        priority=priority,
        start_within=start_within,
        finish_within=finish_within,
        run_timeout_seconds=run_timeout_seconds,
        max_attempts=max_attempts,
    )
    next_run_at = (
        _first_after(values["cron"], values["timezone"], django_timezone.now()) if enabled else None
    )
    return Schedule.objects.create(
        endpoint=endpoint,
        enabled=enabled,
        next_run_at=next_run_at,
        created_by=by,
        **values,
    )


def update(schedule: Schedule, **changes: Any) -> Schedule:
    """Change ``schedule``'s fields (named as ``add`` names them); a new cron or time zone
    moves the next run to its first tick from now. The endpoint is fixed at creation."""
    by_arg = {_ARG_NAMES.get(column, column): column for column in _FIELDS}
    unknown = set(changes) - set(by_arg)
    if unknown:
        raise InvalidInput(sorted(unknown)[0], "cannot be changed")
    with transaction.atomic():
        current = Schedule.objects.select_for_update().get(pk=schedule.pk)
        values = {column: getattr(current, column) for column in _FIELDS}
        for name, value in changes.items():
            values[by_arg[name]] = value
        checked = _checked(values)
        moved = (checked["cron"], checked["timezone"]) != (current.cron, current.timezone)
        for column, value in checked.items():
            setattr(current, column, value)
        if moved and current.enabled:
            current.next_run_at = _first_after(
                current.cron, current.timezone, django_timezone.now()
            )
        current.save()
    return current


def pause(schedule: Schedule) -> bool:
    """Stop firing ``schedule``; return whether that changed anything."""
    changed = Schedule.objects.filter(pk=schedule.pk, enabled=True).update(
        enabled=False, next_run_at=None
    )
    schedule.enabled, schedule.next_run_at = False, None
    return bool(changed)


def resume(schedule: Schedule) -> bool:
    """Fire ``schedule`` again from its first tick after now (ticks while paused are not owed);
    return whether that changed anything. ``InvalidInput`` naming ``cron`` if its cron is no
    longer accepted (a six-field cron kept from before ``check_cron`` refused it: migration
    todos/0027 paused those)."""
    check_cron(schedule.cron, ZoneInfo(schedule.timezone))
    next_run_at = _first_after(schedule.cron, schedule.timezone, django_timezone.now())
    changed = Schedule.objects.filter(pk=schedule.pk, enabled=False).update(
        enabled=True, next_run_at=next_run_at
    )
    if changed:
        schedule.enabled, schedule.next_run_at = True, next_run_at
    return bool(changed)


def run_now(schedule: Schedule) -> ScheduleRun:
    """Create the schedule's todo now, as a tick at this instant would; the cron's next run
    stays where it is. A refused todo (endpoint revoked) is recorded and raises."""
    with transaction.atomic():
        row = fetch_one(
            "SELECT s.*, now() AS now FROM schedules s WHERE s.id = %(id)s FOR UPDATE",
            {"id": schedule.pk},
        )
        if row is None:
            raise InvalidInput("schedule", "unknown schedule")
        tick = row["now"]
        todo_id, error = _create_todo(row, tick)
        if todo_id is None:
            raise InvalidInput("endpoint", error)
        run = ScheduleRun.objects.create(
            schedule_id=schedule.pk, tick=tick, todo_id=todo_id, ticks=0, error=""
        )
    return run


def remove(schedule: Schedule) -> None:
    """Delete ``schedule`` and its runs; the todos it created stay."""
    Schedule.objects.filter(pk=schedule.pk).delete()


def remove_many(queryset: QuerySet[Schedule]) -> None:
    """Delete every schedule of ``queryset`` as ``remove`` does."""
    for schedule in queryset:
        remove(schedule)


# --- reads -----------------------------------------------------------------------------------


def visible(human: Human) -> QuerySet[Schedule]:
    """The schedules of the endpoints ``human`` sees (its own and its teams',
    ``Scope.endpoints``): a schedule is owned through its endpoint."""
    return Schedule.objects.filter(
        endpoint__in=Endpoint.objects.filter(Scope.of_human(human.pk).endpoints())
    ).select_related("endpoint")


def get_visible(human: Human | None, schedule_id: Any) -> Schedule:
    """The schedule ``schedule_id`` if ``human`` sees its endpoint (owns it, or is a member of
    its team; any, when None); raise ``InvalidInput`` for an unknown or foreign id alike."""
    try:
        key = int(schedule_id)
    except (TypeError, ValueError):
        raise InvalidInput("schedule", "unknown schedule") from None
    found = (visible(human) if human is not None else Schedule.objects).filter(pk=key).first()
    if found is None:
        raise InvalidInput("schedule", "unknown schedule")
    return found
