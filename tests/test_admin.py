"""Every admin page of every app renders for a superuser, in a number of queries that does not
grow with the rows listed. What each admin does is tested in its app's tests/<app>/test_admin.py."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from switchboard import runtime_settings
from switchboard.credentials import mint_key
from switchboard.models import EndpointKey, Setting
from tests.admin_helpers import admin_page, admin_url
from tests.base import Personas
from tests.factories import EndpointFactory, HumanFactory, RuleFactory, SourceFactory
from tests.reach import BOT, claimed
from todos import lifecycle
from todos.models import Event, Rule, Source, Todo

pytestmark = pytest.mark.django_db


def _add_rows(p: Personas, n: int) -> None:
    """``n`` more rows of every kind the admin lists, each reached the way the product does."""
    for i in range(n):
        owner = HumanFactory()
        mint_key(EndpointFactory(owner=owner))
        done = claimed(p.endpoint_a.id, "work", owner=BOT, payload={"i": i}).todo.id
        lifecycle.complete(p.endpoint_a.id, done, owner=BOT, summary="done")
        lifecycle.fail(
            p.endpoint_b.id,
            claimed(p.endpoint_b.id, "work", owner=BOT).todo.id,
            owner=BOT,
            summary="no",
        )
        lifecycle.create(p.endpoint_a.id, queue=f"queue-{i}", title=f"pending {i}")
        source = SourceFactory(owner=p.alice)
        RuleFactory(source=source, endpoint=p.endpoint_a)
        Event.objects.create(source=source, disposition="routed", payload={"i": i})
    names = sorted(runtime_settings.FIELDS)
    for name in names[: min(len(names), Setting.objects.count() + n)]:
        runtime_settings.put(name, runtime_settings.FIELDS[name].metadata["min"])


CHANGELISTS = [
    "admin:switchboard_human_changelist",
    "admin:switchboard_endpoint_changelist",
    "admin:switchboard_endpointkey_changelist",
    "admin:switchboard_setting_changelist",
    "admin:todos_todo_changelist",
    "admin:todos_source_changelist",
    "admin:todos_rule_changelist",
    "admin:todos_event_changelist",
    "admin:attempts_todoattempt_changelist",
    "admin:todos_pushattempt_changelist",
]


@pytest.mark.parametrize("name", CHANGELISTS)
def test_changelist_renders_for_a_superuser(
    admin_client: Client, personas: Personas, name: str
) -> None:
    _add_rows(personas, 2)
    admin_page(admin_client, reverse(name))


@pytest.mark.parametrize("name", CHANGELISTS)
def test_changelist_queries_do_not_grow_with_its_rows(
    admin_client: Client, personas: Personas, name: str
) -> None:
    url = reverse(name)
    _add_rows(personas, 1)
    admin_page(admin_client, url)  # warm per-process caches (content types, permissions)
    with CaptureQueriesContext(connection) as few:
        admin_page(admin_client, url)
    _add_rows(personas, 4)
    with CaptureQueriesContext(connection) as many:
        admin_page(admin_client, url)

    assert len(many) == len(few), [q["sql"] for q in many.captured_queries]
    assert len(few) <= 15


def test_change_page_of_every_model_renders_for_a_superuser(
    admin_client: Client, personas: Personas
) -> None:
    _add_rows(personas, 1)
    pages = {
        "switchboard_human": personas.alice.pk,
        "switchboard_endpoint": personas.endpoint_a.pk,
        "switchboard_endpointkey": EndpointKey.objects.filter(endpoint=personas.endpoint_a)
        .get()
        .pk,
        "switchboard_setting": Setting.objects.first().pk,  # type: ignore[union-attr]
        "todos_todo": Todo.objects.filter(state="completed").first().pk,  # type: ignore[union-attr]
        "todos_source": Source.objects.first().pk,  # type: ignore[union-attr]
        "todos_rule": Rule.objects.first().pk,  # type: ignore[union-attr]
        "todos_event": Event.objects.first().pk,  # type: ignore[union-attr]
    }
    for name, pk in pages.items():
        admin_page(admin_client, admin_url(f"admin:{name}_change", pk))


@pytest.mark.parametrize(
    "name",
    [
        "switchboard_human",
        "switchboard_endpoint",
        "switchboard_setting",
        "todos_source",
        "todos_rule",
        "todos_queuesettings",
    ],
)
def test_add_page_renders_where_adding_is_allowed(admin_client: Client, name: str) -> None:
    admin_page(admin_client, reverse(f"admin:{name}_add"))


def test_every_model_is_named_in_a_plural_people_write() -> None:
    """Django's default plural adds an "s": "queue settingss", "alert deliverys" on the
    admin's index; a model whose name ends so says its plural itself."""
    from django.contrib import admin

    for model in admin.site._registry:
        singular = str(model._meta.verbose_name)
        plural = str(model._meta.verbose_name_plural)
        assert not plural.endswith("ss") or singular.endswith("ss"), plural
        assert not (plural.endswith("ys") and singular[-2:-1] not in "aeiou"), plural
