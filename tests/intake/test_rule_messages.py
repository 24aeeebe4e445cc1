"""A rule's bad number says one thing, the rule's bound, and the same thing whichever door it
came through: ``manage.py create_rule``, the Board's rule form, the admin. Django's own field
validator used to speak first ("Ensure this value is less than or equal to 2147483647. A
positive number of seconds (at most a year).")."""

from __future__ import annotations

import html
import re
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from tests.base import Personas
from tests.board.test_sources import github_source, rule_data
from tests.factories import SourceFactory
from todos.models import Rule

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_client(personas: Personas) -> Client:
    client = Client()
    client.force_login(personas.alice)
    return client


WINDOW = "A positive number of seconds (at most a year)."
# (the command's options, the form's fields, the field refused, its one message)
CASES: list[tuple[list[str], dict[str, str], str, str]] = [
    (
        ["--finish-within", "99999999999"],
        {"finish_within_seconds": "99999999999"},
        "finish_within_seconds",
        WINDOW,
    ),
    (["--delay", "0"], {"delay_seconds": "0"}, "delay_seconds", WINDOW),
    (
        ["--max-cost-usd", "1e-9"],
        {"max_cost_usd": "1e-9"},
        "max_cost_usd",
        "Must have at most 6 decimals.",
    ),
    (
        ["--max-cost-usd", "nan"],
        {"max_cost_usd": "nan"},
        "max_cost_usd",
        "Must be a non-negative number of US dollars.",
    ),
    (
        ["--max-cost-usd", "-1"],
        {"max_cost_usd": "-1"},
        "max_cost_usd",
        "Must be a non-negative number of US dollars.",
    ),
    (
        ["--run-timeout", "99999999999"],
        {"run_timeout_seconds": "99999999999"},
        "run_timeout_seconds",
        "Must be between 10 and 604800 seconds.",
    ),
    (["--priority", "2000"], {"priority": "2000"}, "priority", "Between -1000 and 1000."),
    (
        ["--max-attempts", "99999999999"],
        {"max_attempts": "99999999999"},
        "max_attempts",
        "Between 1 and 1000.",
    ),
    (
        ["--start-within", "100", "--finish-within", "50"],
        {"start_within_seconds": "100", "finish_within_seconds": "50"},
        "start_within_seconds",
        "Must not be more than “Finish within seconds” (finish_within_seconds).",
    ),
]


def command(*args: str) -> None:
    call_command(
        "create_rule",
        *("--source", "github", "--endpoint", "agent-a", "--queue", "q", *args),
        stdout=StringIO(),
        stderr=StringIO(),
    )


def field_errors(body: str, field: str) -> list[str]:
    found = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', body, re.S)
    assert found is not None, body
    return [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", found[1], re.S)]


@pytest.mark.parametrize(("args", "form", "field", "message"), CASES)
def test_create_rule_says_one_thing_per_field(
    personas: Personas, args: list[str], form: dict[str, str], field: str, message: str
) -> None:
    github_source(personas)
    with pytest.raises(CommandError) as refused:
        command(*args)
    assert str(refused.value) == f"{field}: {message}"
    assert Rule.objects.count() == 1  # only github_source's


@pytest.mark.parametrize(("args", "form", "field", "message"), CASES)
def test_the_boards_rule_form_says_the_same(
    alice_client: Client,
    personas: Personas,
    args: list[str],
    form: dict[str, str],
    field: str,
    message: str,
) -> None:
    github_source(personas)
    response = alice_client.post(reverse("rule_new", args=["github"]), rule_data(personas, **form))
    assert response.status_code == 200
    assert field_errors(response.content.decode(), field) == [message]
    assert Rule.objects.count() == 1


def test_the_admin_says_the_same(admin_client: Client, personas: Personas) -> None:
    """The admin's rule pages edit the rule's name, place, endpoint, queue, attempts and match
    (not its time or cap): the one number there is refused in the same words."""
    source = SourceFactory(owner=personas.alice)
    data: dict[str, Any] = {
        "source": source.pk,
        "position": "0",
        "name": "to the agent",
        "enabled": "on",
        "endpoint": personas.endpoint_a.pk,
        "queue": "ci",
        "max_attempts": "99999999999",
        "match": "{}",
        "title_template": "",
        "work_order_template": "",
    }
    response = admin_client.post(reverse("admin:todos_rule_add"), data)
    assert response.status_code == 200
    body = html.unescape(response.content.decode())
    assert "Between 1 and 1000." in body
    assert "Ensure this value" not in body
    assert not Rule.objects.exists()


def test_a_zero_cap_is_a_cap_and_good_numbers_are_kept(personas: Personas) -> None:
    github_source(personas)
    command("--max-cost-usd", "0", "--finish-within", "3600", "--run-timeout", "60")
    rule = Rule.objects.get(queue="q")
    assert (str(rule.max_cost_usd), rule.finish_within_seconds, rule.run_timeout_seconds) == (
        "0.000000",
        3600,
        60,
    )
