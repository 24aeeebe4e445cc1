"""Personas: alice owns endpoint A, bob owns endpoint B, and an admin.

Bob is the foreign scope every read must hide from alice, and the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass

from switchboard.credentials import mint_key
from switchboard.models import Endpoint, Human
from tests.factories import EndpointFactory, HumanFactory


@dataclass(frozen=True)
class Personas:
    alice: Human
    bob: Human
    admin: Human
    endpoint_a: Endpoint
    endpoint_b: Endpoint
    key_a: str
    key_b: str


def make_personas() -> Personas:
    alice = HumanFactory(username="alice")
    bob = HumanFactory(username="bob")
    admin = HumanFactory(username="admin", is_staff=True, is_superuser=True)
    endpoint_a = EndpointFactory(owner=alice, slug="agent-a", name="Alice's agent")
    endpoint_b = EndpointFactory(owner=bob, slug="agent-b", name="Bob's agent")
    _, key_a = mint_key(endpoint_a)
    _, key_b = mint_key(endpoint_b)
    return Personas(alice, bob, admin, endpoint_a, endpoint_b, key_a, key_b)
