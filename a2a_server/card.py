"""The agent card of one endpoint: the endpoint as one A2A agent, its queues as skills.

Served at ``/a2a/{slug}/.well-known/agent-card.json`` by the SDK's card route, behind the
endpoint's bearer like every other path under ``/a2a/{slug}`` (the skills name the endpoint's
queues, which are its owner's business). The card declares the JSON-RPC interface twice, in
protocol 1.0 and 0.3, at the same URL: the SDK's routes answer both there.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0
from django.conf import settings

from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import queries

try:
    _VERSION = version("switchboard")
except PackageNotFoundError:  # running from a checkout that was never pip-installed
    _VERSION = "0"

SCHEME = "bearer"
JSONRPC = "JSONRPC"
MODES = ["text/plain", "application/json"]


def skill(queue: str) -> AgentSkill:
    return AgentSkill(
        id=queue,
        name=queue,
        description=f'Work on the "{queue}" queue: send a message with metadata'
        f' {{"queue": "{queue}"}}; an agent of this endpoint claims it and reports back.',
        tags=["queue"],
        input_modes=MODES,
        output_modes=MODES,
    )


def card(endpoint: Endpoint, url: str, queues: list[str]) -> AgentCard:
    """The card of ``endpoint`` served at ``url``; ``queues`` become its skills."""
    default = settings.SWITCHBOARD_A2A_DEFAULT_QUEUE
    return AgentCard(
        name=endpoint.name,
        description=f"Switchboard endpoint {endpoint.slug}: each message becomes a todo that"
        f" the endpoint's agents claim and complete. Without a queue in the message's"
        f' metadata it goes to "{default}".',
        version=_VERSION,
        supported_interfaces=[
            AgentInterface(
                url=url,
                protocol_binding=JSONRPC,
                protocol_version=PROTOCOL_VERSION_1_0,
            ),
            AgentInterface(
                url=url,
                protocol_binding=JSONRPC,
                protocol_version=PROTOCOL_VERSION_0_3,
            ),
        ],
        capabilities=AgentCapabilities(
            streaming=True, push_notifications=False, extended_agent_card=False
        ),
        security_schemes={
            SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    bearer_format="sbk_…",
                    description="A key of this endpoint (its verbs include a2a).",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={SCHEME: StringList()})],
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=[skill(q) for q in sorted({*queues, default})],
    )


def endpoint_card(endpoint: Endpoint, url: str) -> AgentCard:
    """The card with the endpoint's listed queues (one read; sync)."""
    return card(endpoint, url, queries.listed_queues(Scope.of_endpoint(endpoint.id)))
