"""A routing rule's time: a delay, start and finish windows counted from the delivery's
arrival, a priority, a run timeout, and a dedupe key read from the payload by a dotted path;
checked when the rule is written, naming the rule's field."""

from __future__ import annotations

import hashlib
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from tests.base import Personas
from tests.intake.conftest import CHECK_RUN_FAILED, Hook
from todos.intake import sources
from todos.models import Event, Rule, Todo

pytestmark = pytest.mark.django_db


def timed(rule: Rule, **time: object) -> None:
    for name, value in time.items():
        setattr(rule, name, value)
    rule.full_clean()
    rule.save()


def test_a_rules_time_reaches_the_todos_it_creates_counted_from_arrival(hook: Hook) -> None:
    timed(
        hook.rule,
        priority=9,
        delay_seconds=60,
        start_within_seconds=600,
        finish_within_seconds=3600,
        run_timeout_seconds=300,
        dedupe_key_path="check_run.html_url",
    )
    assert hook.post().status_code == 202
    [todo] = Todo.objects.all()
    assert (todo.priority, todo.run_timeout_seconds, todo.dedupe_key) == (9, 300, "https://ci/1")
    assert todo.not_before and todo.start_by and todo.finish_by
    assert (todo.start_by - todo.not_before).total_seconds() == 540
    assert (todo.finish_by - todo.not_before).total_seconds() == 3540


def test_a_rules_cost_cap_reaches_the_todos_it_creates(hook: Hook) -> None:
    timed(hook.rule, max_cost_usd=Decimal("0.25"))
    assert hook.post().status_code == 202
    assert Todo.objects.get().max_cost_usd == Decimal("0.25")


def second(run_id: int) -> dict[str, object]:
    """The fixture's delivery as another check run (a new body: a signed body is accepted once
    per source), with the same html_url."""
    return {**CHECK_RUN_FAILED, "check_run": {**CHECK_RUN_FAILED["check_run"], "id": run_id}}


def test_a_second_delivery_with_the_same_key_creates_nothing_new(hook: Hook) -> None:
    timed(hook.rule, dedupe_key_path="check_run.html_url")
    hook.post(second(1))
    hook.post(second(2))
    assert Todo.objects.count() == 1
    latest = Event.objects.order_by("-id").first()
    assert latest is not None and latest.routing_trace[0].get("deduplicated") is True


@pytest.mark.parametrize(
    "url", ["https://ci/" + "x" * 300, "https://ci/1\nsecond line", "https://ci/\u00e9" * 60]
)
def test_a_long_or_multiline_payload_key_deduplicates_by_its_digest(hook: Hook, url: str) -> None:
    """A value that is no key itself (over 256 bytes, a control character) made the rule
    create nothing; its digest is the key, and two deliveries with it make one todo."""
    timed(hook.rule, dedupe_key_path="check_run.html_url")

    def with_url(run_id: int) -> dict[str, object]:
        body = second(run_id)
        return {**body, "check_run": {**body["check_run"], "html_url": url}}  # type: ignore[dict-item]

    hook.post(with_url(1))
    hook.post(with_url(2))
    [todo] = Todo.objects.all()
    assert todo.dedupe_key == "sha256:" + hashlib.sha256(url.encode()).hexdigest()
    latest = Event.objects.order_by("-id").first()
    assert latest is not None and latest.routing_trace[0].get("deduplicated") is True


def test_a_missing_dedupe_path_creates_without_a_key(hook: Hook) -> None:
    timed(hook.rule, dedupe_key_path="check_run.nothing_here")
    hook.post(second(1))
    hook.post(second(2))
    assert list(Todo.objects.values_list("dedupe_key", flat=True)) == [None, None]


@pytest.mark.parametrize(
    ("time", "field"),
    [
        ({"priority": 1001}, "priority"),
        ({"run_timeout_seconds": 9}, "run_timeout_seconds"),
        ({"delay_seconds": 0}, "delay_seconds"),
        ({"delay_seconds": 700, "start_within_seconds": 600}, "delay_seconds"),
        ({"start_within_seconds": 900, "finish_within_seconds": 600}, "start_within_seconds"),
        ({"dedupe_key_path": "a..b"}, "dedupe_key_path"),
        ({"max_cost_usd": Decimal("-1")}, "max_cost_usd"),
    ],
)
def test_bad_rule_time_is_refused_naming_the_field(
    personas: Personas, hook: Hook, time: dict[str, object], field: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        sources.create_rule(hook.source, personas.endpoint_a, queue="q", **time)
    assert field in refused.value.message_dict
    assert Rule.objects.count() == 1
