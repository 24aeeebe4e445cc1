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
    AuthorizationCodeOAuthFlow,
    HTTPAuthSecurityScheme,
    OAuth2SecurityScheme,
    OAuthFlows,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0
from django.conf import settings

from switchboard import oauth
from switchboard.lib import oauth_scopes
from switchboard.models import Endpoint
from switchboard.scope import Scope
from todos import queries

try:
    _VERSION = version("switchboard")
except PackageNotFoundError:  # running from a checkout that was never pip-installed
    _VERSION = "0"

SCHEME = "bearer"
OAUTH_SCHEME = "oauth2"
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


def oauth_scheme(origin: str, slug: str) -> SecurityScheme:
    """OAuth 2 authorization code (PKCE S256) from this server, for a token issued for exactly
    ``{origin}/a2a/{slug}`` with ``todos:submit``; the metadata URL is the authorization
    server's (RFC 8414), the resource's own is path-inserted (RFC 9728)."""
    return SecurityScheme(
        oauth2_security_scheme=OAuth2SecurityScheme(
            description="OAuth 2.1 authorization code with PKCE S256, consented on the Board;"
            f" send resource={oauth.resource_url(origin, oauth.A2A, slug)} (RFC 8707). The"
            f" protected-resource metadata is {oauth.metadata_url(origin, oauth.A2A, slug)}.",
            oauth2_metadata_url=f"{origin}/.well-known/oauth-authorization-server",
            flows=OAuthFlows(
                authorization_code=AuthorizationCodeOAuthFlow(
                    authorization_url=f"{origin}/oauth/authorize/",
                    token_url=f"{origin}/oauth/token/",
                    refresh_url=f"{origin}/oauth/token/",
                    scopes={s: oauth_scopes.DESCRIPTIONS[s] for s in oauth_scopes.ALL},
                    pkce_required=True,
                )
            ),
        )
    )


def card(endpoint: Endpoint, url: str, queues: list[str], origin: str | None = None) -> AgentCard:
    """The card of ``endpoint`` served at ``url``; ``queues`` become its skills. With the
    server's ``origin`` it lists OAuth beside the key (either scheme will do)."""
    schemes = {
        SCHEME: SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="Bearer",
                bearer_format="sbk_…",
                description="A key of this endpoint (its verbs include a2a).",
            )
        )
    }
    requirements = [SecurityRequirement(schemes={SCHEME: StringList()})]
    if origin is not None:
        schemes[OAUTH_SCHEME] = oauth_scheme(origin, endpoint.slug)
        requirements.append(
            SecurityRequirement(schemes={OAUTH_SCHEME: StringList(list=[oauth_scopes.SUBMIT])})
        )
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
        security_schemes=schemes,
        security_requirements=requirements,
        default_input_modes=MODES,
        default_output_modes=MODES,
        skills=[skill(q) for q in sorted({*queues, default})],
    )


def endpoint_card(endpoint: Endpoint, url: str, origin: str | None = None) -> AgentCard:
    """The card with the endpoint's listed queues (one read; sync)."""
    return card(endpoint, url, queries.listed_queues(Scope.of_endpoint(endpoint.id)), origin)
