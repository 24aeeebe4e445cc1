"""Who acted, one way: the Actor value (switchboard/lib/actors.py), its one resolver
(switchboard/actors.py), and no spelling of an actor left anywhere else in the product."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from switchboard import actors
from switchboard.lib.actors import Actor, InvalidActor
from tests.base import Personas
from tests.factories import EndpointFactory

ROOT = Path(__file__).resolve().parents[2]
EP = uuid.UUID("0b6f3c1e-8a52-4d7e-9f10-2c3d4e5f6a7b")


# --- the value --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("actor", "spelled", "column"),
    [
        (Actor.human(42), "human:42", "human"),
        (Actor.endpoint(EP), f"endpoint:{EP}", "endpoint"),
        (Actor.requester(str(EP).upper()), f"requester:{EP}", "endpoint"),
        (Actor.sweeper(), "sweeper", "system"),
        (Actor.doorbell(), "doorbell", "system"),
        (Actor.command("queue"), "command:queue", "system"),
    ],
)
def test_each_kind_has_one_spelling_that_parses_back(
    actor: Actor, spelled: str, column: str
) -> None:
    assert str(actor) == spelled
    assert Actor.parse(spelled) == actor
    assert actor.column_kind == column


@pytest.mark.parametrize(
    "text",
    [
        "",
        "worker-1",  # an agent's own lease label: no actor
        "human:alice",  # the old username spelling
        "human:0",
        "human:12345678901234567890",
        f"a2a:{EP}",
        "endpoint:my-slug",
        f"endpoint:{str(EP).upper()}",  # one spelling: the lowercase uuid
        "sweeper:1",
        "command:",
        "command:Queue",
        "manage.py",
    ],
)
def test_text_that_is_no_spelling_is_refused(text: str) -> None:
    with pytest.raises(InvalidActor):
        Actor.parse(text)
    assert Actor.parse_or_none(text) is None


def test_labels_say_who_without_a_lookup_where_none_is_needed() -> None:
    assert Actor.sweeper().label() == "sweeper"
    assert Actor.command("queue").label() == "command queue"
    assert Actor.human(7).label() == "a deleted operator"
    assert Actor.requester(EP).label("ci") == "requester via ci"
    assert Actor.endpoint(EP).label("ci") == "ci"


# --- the resolver -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_one_query_names_every_human_and_endpoint_on_a_page(personas: Personas) -> None:
    other = EndpointFactory(owner=personas.bob)
    refs = [
        f"human:{personas.alice.id}",
        f"human:{personas.bob.id}",
        "human:999999",
        f"endpoint:{personas.endpoint_a.id}",
        f"requester:{other.id}",
        f"endpoint:{uuid.uuid4()}",
        "sweeper",
        "worker-1",
        None,
    ]
    with CaptureQueriesContext(connection) as queries:
        names = actors.resolve(refs * 20)
    assert len(queries) == 1
    assert [names.label(ref) for ref in refs] == [
        "alice",
        "bob",
        "a deleted operator",
        personas.endpoint_a.slug,
        f"requester via {other.slug}",
        "a deleted endpoint",
        "sweeper",
        "worker-1",
        "",
    ]
    assert names.holder(f"human:{personas.alice.id}") == "operator alice"
    assert names.holder("human:999999") == "a deleted operator"
    assert names.holder("worker-1") == "worker-1"


@pytest.mark.django_db
def test_names_the_page_holds_cost_no_query(personas: Personas) -> None:
    known = actors.viewer(personas.alice) | {Actor.endpoint(EP): "ci"}
    with CaptureQueriesContext(connection) as queries:
        names = actors.resolve([f"human:{personas.alice.id}", f"requester:{EP}", "sweeper"], known)
    assert len(queries) == 0
    assert names.label(f"requester:{EP}") == "requester via ci"


# --- no other spelling in the product ---------------------------------------------------------

_PRODUCT = ("switchboard", "todos", "attempts", "activity", "otlp", "mcp_server", "a2a_server")
# An actor spelled by hand: an f-string or a SQL concatenation building a reference, a prefix
# taken apart, or the old literal spellings.
_OLD = re.compile(
    r"""f["'](human|endpoint|requester|command|a2a):\{"""
    r"""|'(human|endpoint|requester|command|a2a):'\s*\|\|"""
    r"""|(startswith|removeprefix)\(["'](human|endpoint|requester|a2a):"""
    r"""|["']actor_ref["']:\s*["']"""
    r"""|["']manage\.py["']\s*[,}]"""
)


def test_no_actor_is_spelled_by_hand_outside_the_value_type() -> None:
    found = []
    for app in _PRODUCT:
        for path in (ROOT / app).rglob("*"):
            if path.suffix not in (".py", ".sql", ".html") or "migrations" in path.parts:
                continue
            if path == ROOT / "switchboard" / "lib" / "actors.py":
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if _OLD.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == []


def test_the_pattern_catches_the_spellings_it_forbids() -> None:
    for line in (
        'owner=f"human:{human_id}"',
        "f'endpoint:{scope.endpoint_id}'",
        'return f"a2a:{endpoint.slug}"',
        "SELECT 'human:' || h.id",
        'owner.startswith("human:")',
        '{"actor_kind": "system", "actor_ref": "manage.py"}',
    ):
        assert _OLD.search(line), line


@pytest.mark.django_db
def test_lease_holders_name_operators_and_endpoints(personas: Personas) -> None:
    ep = personas.endpoint_a
    owners = [f"human:{personas.bob.id}", f"endpoint:{ep.id}", f"endpoint:{EP}", "bot-1", None]
    with CaptureQueriesContext(connection) as queries:
        names = actors.resolve(owners * 5, actors.viewer(personas.alice))
    assert len(queries) == 1
    assert [names.holder(o) for o in owners] == [
        "operator bob",
        f"endpoint {ep.slug}",
        "a deleted endpoint",
        "bot-1",  # an owner a caller chose: as given
        "",
    ]
    known = actors.viewer(personas.alice) | {Actor.endpoint(ep.id): ep.slug}
    with CaptureQueriesContext(connection) as queries:
        actors.resolve([f"human:{personas.alice.id}", f"endpoint:{ep.id}", "bot-1"], known)
    assert len(queries) == 0
