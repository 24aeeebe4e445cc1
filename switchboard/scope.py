"""Owner scope: who may see which todos. The one place each side's predicate is written.

An endpoint sees the todos on its own queues; a human sees the todos of the endpoints it owns
and of the endpoints its teams own (docs/architecture.md, docs/decisions/0034-teams.md). A
foreign id and an unknown id are indistinguishable to every caller. Every surface reads through
these predicates, so widening them here widens every surface.

Both forms are given: a ``Q`` for ORM reads and an SQL fragment (aliased ``t`` for todos) with
its named parameters for the lifecycle statements, which splice it in at load time.

The human's teams are read as ``e.team_id = ANY (ARRAY(SELECT …))``: an InitPlan that reads the
membership once (``team_members_human_team_key``, index only), after which the endpoints are
found by two index conditions (``owner_id``, ``team_id``) ORed in a bitmap. A plain
``IN (SELECT …)`` under an ``OR`` would be a filter over every endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db.models import Q, QuerySet

from switchboard.models import Endpoint, Owned, Team, TeamMember, TeamRole

# The human's teams, and those of them the human administers.
HUMAN_TEAMS_SQL = "SELECT m.team_id FROM team_members m WHERE m.human_id = %(scope_human_id)s"
HUMAN_ADMIN_TEAMS_SQL = HUMAN_TEAMS_SQL + " AND m.role = 'admin'"
# Each side on endpoints (aliased ``e``), for reads that start from the endpoints.
HUMAN_ENDPOINTS_SQL = (
    f"(e.owner_id = %(scope_human_id)s OR e.team_id = ANY (ARRAY({HUMAN_TEAMS_SQL})))"
)
ENDPOINT_ENDPOINTS_SQL = "e.id = %(scope_endpoint_id)s"
# The endpoints an owned row's owner sees where the owner is a column of that row, not a
# parameter: those an alert channel hears about (alerts/sql/_rule_endpoints.sql), as
# ``owner_endpoints`` says for the ORM. Two fragments, for a row aliased ``c``: OWNER_TEAMS_SQL,
# the teams whose endpoints it reaches (a team's own; a human's teams, read once per row as
# HUMAN_TEAMS_SQL is per parameter), computed as ``c.teams`` where the row is read; then
# OWNER_ENDPOINTS_SQL on endpoints (``e``): the human's own (a team's row has no owner_id) or
# those teams'. The memberships are read once per channel and the endpoints found by two index
# conditions ORed in a bitmap; as one correlated condition on the join, the membership read ran
# for every (rule, endpoint) pair: 24.5 s against 27.5 ms for one kind's rules on 400
# channels, 2,000 endpoints and 40 teams (docs/decisions/0034-teams.md).
OWNER_TEAMS_SQL = (
    "CASE WHEN c.team_id IS NOT NULL THEN ARRAY[c.team_id] ELSE ARRAY("
    "SELECT m.team_id FROM team_members m WHERE m.human_id = c.owner_id) END"
)
OWNER_ENDPOINTS_SQL = "(e.owner_id = c.owner_id OR e.team_id = ANY (c.teams))"
# The endpoints a human manages (edits, vends and revokes keys for, revokes, moves): their own
# and their teams' where they are an admin.
HUMAN_MANAGES_SQL = (
    f"(e.owner_id = %(scope_human_id)s OR e.team_id = ANY (ARRAY({HUMAN_ADMIN_TEAMS_SQL})))"
)
# The SQL predicates on todos, spliced into statements where ``{endpoint_scope}`` /
# ``{human_scope}`` stand.
ENDPOINT_SCOPE_SQL = "t.endpoint_id = %(scope_endpoint_id)s"
HUMAN_SCOPE_SQL = f"t.endpoint_id IN (SELECT e.id FROM endpoints e WHERE {HUMAN_ENDPOINTS_SQL})"


def teams_of(human_id: int, *, admin: bool = False) -> QuerySet[TeamMember, Any]:
    """The ids of the teams ``human_id`` belongs to (administers, with ``admin``), as a
    subquery for ``team__in``."""
    rows = TeamMember.objects.filter(human_id=human_id)
    if admin:
        rows = rows.filter(role=TeamRole.ADMIN)
    return rows.values("team_id")


def owned_by(human_id: int, prefix: str = "") -> Q:
    """The predicate on anything ``Owned`` (endpoints, sources, alert channels) that
    ``human_id`` sees: its own, and its teams'. ``prefix`` reaches the owned row through a
    relation (``channel__`` for an alert)."""
    return Q(**{f"{prefix}owner_id": human_id}) | Q(**{f"{prefix}team__in": teams_of(human_id)})


def managed_by(human_id: int) -> Q:
    """The predicate on anything ``Owned`` that ``human_id`` manages: its own, and those of the
    teams it administers."""
    return Q(owner_id=human_id) | Q(team__in=teams_of(human_id, admin=True))


def administers(human_id: int, team: Team | int) -> bool:
    team_id = team if isinstance(team, int) else team.pk
    return TeamMember.objects.filter(
        human_id=human_id, team_id=team_id, role=TeamRole.ADMIN
    ).exists()


def owner_endpoints(owned: Owned) -> Q:
    """The predicate on the endpoints what ``owned``'s owner sees: a human's own and its
    teams', or for a team's, that team's only (OWNER_ENDPOINTS_SQL in SQL). An alert channel
    hears about these; a source's rules route to these (``routable_from``)."""
    if owned.team_id is not None:
        return Q(team_id=owned.team_id)
    assert owned.owner_id is not None
    return owned_by(owned.owner_id)


def routable_from(source: Owned) -> Q:
    """The predicate on endpoints a source's rules may route to: those its owner sees
    (``owner_endpoints``), so a team's source routes to that team's endpoints only."""
    return owner_endpoints(source)


def acting_human(owner_id: int | None, team_id: int | None) -> int | None:
    """A human whose scope holds what ``owner_id`` or ``team_id`` owns, for the system's actions
    in its owner's scope (the admin's, a command's without ``--as``): the owner, or an admin of
    the team (any member if none is left); None for a team with no member."""
    if owner_id is not None:
        return owner_id
    if team_id is None:
        return None
    return (
        TeamMember.objects.filter(team_id=team_id)
        .order_by("role", "id")  # "admin" sorts before "member": admins first
        .values_list("human_id", flat=True)
        .first()
    )


@dataclass(frozen=True, slots=True)
class Scope:
    """Either an endpoint's scope or a human's; build one with the class methods."""

    endpoint_id: UUID | None = None
    human_id: int | None = None

    @classmethod
    def of_endpoint(cls, endpoint_id: UUID) -> Scope:
        return cls(endpoint_id=endpoint_id)

    @classmethod
    def of_human(cls, human_id: int) -> Scope:
        return cls(human_id=human_id)

    def __post_init__(self) -> None:
        if (self.endpoint_id is None) == (self.human_id is None):
            raise ValueError("a scope is an endpoint's or a human's, exactly one")

    @property
    def is_endpoint(self) -> bool:
        return self.endpoint_id is not None

    def todos(self, prefix: str = "") -> Q:
        """The predicate on todos (``prefix`` reaches them through a relation, e.g. ``todo__``)."""
        if self.endpoint_id is not None:
            return Q(**{f"{prefix}endpoint_id": self.endpoint_id})
        return Q(**{f"{prefix}endpoint__in": Endpoint.objects.filter(self.endpoints())})

    def endpoints(self) -> Q:
        """The predicate on endpoints: the endpoint itself, or those the human sees (its own
        and its teams')."""
        if self.endpoint_id is not None:
            return Q(id=self.endpoint_id)
        assert self.human_id is not None
        return owned_by(self.human_id)

    def managed(self) -> Q:
        """The predicate on endpoints (or anything ``Owned``) the human manages; an endpoint
        manages nothing, not even itself."""
        if self.human_id is None:
            return Q(pk__in=[])
        return managed_by(self.human_id)

    def owned(self, prefix: str = "") -> Q:
        """The predicate on anything ``Owned`` the human sees, its own and its teams' (none for
        an endpoint's scope); ``prefix`` reaches it through a relation (``channel__``: alerts
        through their channel)."""
        if self.human_id is None:
            return Q(pk__in=[])
        return owned_by(self.human_id, prefix)

    @property
    def sql(self) -> str:
        return ENDPOINT_SCOPE_SQL if self.endpoint_id is not None else HUMAN_SCOPE_SQL

    @property
    def endpoints_sql(self) -> str:
        """The predicate on endpoints (aliased ``e``), as ``endpoints()`` is for the ORM."""
        return ENDPOINT_ENDPOINTS_SQL if self.endpoint_id is not None else HUMAN_ENDPOINTS_SQL

    @property
    def params(self) -> dict[str, Any]:
        if self.endpoint_id is not None:
            return {"scope_endpoint_id": self.endpoint_id}
        return {"scope_human_id": self.human_id}
