"""Owner scope: an endpoint sees its own todos, a human those of the endpoints it
owns; bob never sees alice's. Both forms are checked: the ORM ``Q`` and the SQL fragment."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from attempts.models import TodoAttempt
from switchboard.lib.sql import fetch_all
from switchboard.models import Endpoint
from switchboard.scope import Scope
from tests.base import Personas
from tests.factories import EndpointFactory
from todos import lifecycle
from todos.models import Todo

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class World:
    personas: Personas
    second_a: Endpoint  # alice's second endpoint
    todos_a: frozenset[str]  # on endpoint A
    todos_a2: frozenset[str]  # on alice's second endpoint
    todos_b: frozenset[str]  # on bob's endpoint B


@pytest.fixture
def world(personas: Personas) -> World:
    second_a = EndpointFactory(owner=personas.alice, slug="agent-a2")

    def make(endpoint: Endpoint, n: int) -> frozenset[str]:
        return frozenset(
            lifecycle.create(endpoint.id, queue="triage", title=f"{endpoint.slug} {i}").id
            for i in range(n)
        )

    return World(
        personas,
        second_a,
        make(personas.endpoint_a, 3),
        make(second_a, 2),
        make(personas.endpoint_b, 4),
    )


Reader = Callable[[Scope], set[str]]


def _orm(scope: Scope) -> set[str]:
    return set(Todo.objects.filter(scope.todos()).values_list("id", flat=True))


def _sql(scope: Scope) -> set[str]:
    rows = fetch_all(f"SELECT t.id FROM todos t WHERE {scope.sql}", scope.params)
    return {row["id"] for row in rows}


# Each test checks the ORM and the SQL form: they are two spellings of one predicate.
FORMS = pytest.mark.parametrize("read", [_orm, _sql], ids=["orm", "sql"])


@FORMS
def test_an_endpoint_sees_only_its_own_todos(world: World, read: Reader) -> None:
    p = world.personas
    assert read(Scope.of_endpoint(p.endpoint_a.id)) == world.todos_a
    assert read(Scope.of_endpoint(world.second_a.id)) == world.todos_a2
    assert read(Scope.of_endpoint(p.endpoint_b.id)) == world.todos_b


@FORMS
def test_a_human_sees_the_todos_of_every_endpoint_it_owns(world: World, read: Reader) -> None:
    assert read(Scope.of_human(world.personas.alice.pk)) == world.todos_a | world.todos_a2


@FORMS
def test_bob_never_sees_alices_todos(world: World, read: Reader) -> None:
    p = world.personas
    alices = world.todos_a | world.todos_a2
    seen_by_bob = read(Scope.of_human(p.bob.pk)) | read(Scope.of_endpoint(p.endpoint_b.id))
    assert seen_by_bob == world.todos_b
    assert not seen_by_bob & alices


@FORMS
def test_an_unknown_endpoint_or_human_sees_nothing(world: World, read: Reader) -> None:
    assert read(Scope.of_endpoint(uuid.uuid4())) == set()
    assert read(Scope.of_human(world.personas.admin.pk)) == set()  # owns no endpoint
    assert read(Scope.of_human(2**62)) == set()


def test_a_human_with_no_endpoint_sees_nothing_even_when_staff(world: World) -> None:
    admin = world.personas.admin
    assert admin.is_superuser
    assert _orm(Scope.of_human(admin.pk)) == set()


def test_the_scope_reaches_todos_through_a_relation_with_a_prefix(world: World) -> None:
    p = world.personas
    lifecycle.claim_next(p.endpoint_a.id, ["triage"], owner="agent-a")
    lifecycle.claim_next(p.endpoint_b.id, ["triage"], owner="agent-b")

    def attempts(scope: Scope) -> set[str]:
        return set(
            TodoAttempt.objects.filter(scope.todos("todo__")).values_list("todo_id", flat=True)
        )

    seen_by_alice = attempts(Scope.of_human(p.alice.pk))
    seen_by_b = attempts(Scope.of_endpoint(p.endpoint_b.id))
    assert len(seen_by_alice) == len(seen_by_b) == 1
    assert seen_by_alice <= world.todos_a
    assert seen_by_b <= world.todos_b


def test_the_endpoint_predicate_names_the_endpoints_in_scope(world: World) -> None:
    p = world.personas
    by_human = set(Endpoint.objects.filter(Scope.of_human(p.alice.pk).endpoints()))
    by_endpoint = set(Endpoint.objects.filter(Scope.of_endpoint(p.endpoint_b.id).endpoints()))
    assert by_human == {p.endpoint_a, world.second_a}
    assert by_endpoint == {p.endpoint_b}


def test_the_sql_fragment_is_parameterised_never_formatted() -> None:
    endpoint_id = uuid.uuid4()
    endpoint_scope = Scope.of_endpoint(endpoint_id)
    human_scope = Scope.of_human(7)

    assert str(endpoint_id) not in endpoint_scope.sql
    assert endpoint_scope.params == {"scope_endpoint_id": endpoint_id}
    assert "%(scope_endpoint_id)s" in endpoint_scope.sql
    assert human_scope.params == {"scope_human_id": 7}
    assert "%(scope_human_id)s" in human_scope.sql
    assert endpoint_scope.is_endpoint
    assert not human_scope.is_endpoint


def test_a_scope_with_both_sides_raises() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Scope(endpoint_id=uuid.uuid4(), human_id=1)


def test_a_scope_with_neither_side_raises() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        Scope()
