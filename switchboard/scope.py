"""Owner scope: who may see which todos. The one place each side's predicate is written.

An endpoint sees the todos on its own queues; a human sees the todos of the endpoints it owns
(docs/architecture.md). A foreign id and an unknown id are indistinguishable to every caller. When
team-owned queues arrive, these predicates widen here and nowhere else.

Both forms are given: a ``Q`` for ORM reads and an SQL fragment (aliased ``t`` for todos) with
its named parameters for the lifecycle statements, which splice it in at load time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db.models import Q

# The SQL predicates, spliced into statements where ``{endpoint_scope}`` / ``{human_scope}`` stand.
ENDPOINT_SCOPE_SQL = "t.endpoint_id = %(scope_endpoint_id)s"
HUMAN_SCOPE_SQL = (
    "t.endpoint_id IN (SELECT e.id FROM endpoints e WHERE e.owner_id = %(scope_human_id)s)"
)
# Each side on endpoints (aliased ``e``), for reads that start from the endpoints.
HUMAN_ENDPOINTS_SQL = "e.owner_id = %(scope_human_id)s"
ENDPOINT_ENDPOINTS_SQL = "e.id = %(scope_endpoint_id)s"
# A human's endpoints where the human is a column of another row, not a parameter: the
# endpoints an alert channel's (``c``) owner may hear about (alerts/sql/_rule_endpoints.sql).
OWNER_ENDPOINTS_SQL = "e.owner_id = c.owner_id"


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
        return Q(**{f"{prefix}endpoint__owner_id": self.human_id})

    def endpoints(self) -> Q:
        """The predicate on endpoints: the endpoint itself, or those the human owns."""
        if self.endpoint_id is not None:
            return Q(id=self.endpoint_id)
        return Q(owner_id=self.human_id)

    def owned(self, field: str = "owner") -> Q:
        """The predicate on rows a human owns (alert channels): the human's own. An endpoint
        owns none."""
        if self.human_id is None:
            return Q(pk__in=[])
        return Q(**{f"{field}_id": self.human_id})

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
