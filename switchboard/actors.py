"""Actors as people read them: the one resolver of a page's actor references to names.

Rows store who acted as ``switchboard.lib.actors.Actor`` spells it (``human:<id>``,
``endpoint:<uuid>``, ``requester:<uuid>``, ``sweeper``, ``doorbell``, ``command:<name>``). A page
(the trail, the feed, the drawer, a lease holder) collects the references it shows and calls
``resolve`` once: one query for every human and endpoint among them
(switchboard/sql/actor_names.sql), none when no reference needs a name, never one per row.
Text that spells no actor (an owner a direct caller of the lifecycle chose) is shown as stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from switchboard.lib.actors import ENDPOINT, HUMAN, Actor
from switchboard.lib.sql import fetch_all, load

_NAMES = load(Path(__file__).parent / "sql", "actor_names")


@dataclass(frozen=True, slots=True)
class Names:
    """The looked-up names of one page's actors: a human's username, an endpoint's slug."""

    found: Mapping[Actor, str] = field(default_factory=dict)

    def label(self, ref: str | None) -> str:
        """Who ``ref`` is, as people read it; text that spells no actor, as stored."""
        actor = Actor.parse_or_none(ref)
        if actor is None:
            return ref or ""
        return actor.label(self._name(actor))

    def name(self, ref: str | None) -> str | None:
        """The looked-up name behind ``ref`` (a human's username, an endpoint's slug), None when
        it needs none, spells no actor or was not found."""
        actor = Actor.parse_or_none(ref)
        return None if actor is None else self._name(actor)

    def holder(self, owner: str | None) -> str:
        """A lease holder as people read it: ``operator <username>`` for a human's lease,
        ``endpoint <slug>`` for an agent's (MCP claims as its endpoint), any other owner as
        given (a label a caller of the lifecycle chose)."""
        actor = Actor.parse_or_none(owner)
        if actor is None or actor.kind not in (HUMAN, ENDPOINT):
            return owner or ""
        name = self._name(actor)
        if name:
            return f"{'operator' if actor.kind == HUMAN else 'endpoint'} {name}"
        return actor.label(None)

    def _name(self, actor: Actor) -> str | None:
        if not actor.needs_name:
            return None
        # An endpoint's agent and its requester share the endpoint's name.
        key = actor if actor.kind == HUMAN else Actor(ENDPOINT, actor.key)
        return self.found.get(key)


def viewer(user: Any) -> dict[Actor, str]:
    """The name a page already holds: the logged-in human's, so naming them costs no query."""
    user_id = getattr(user, "id", None)
    return {Actor.human(user_id): user.username} if isinstance(user_id, int) else {}


def resolve(refs: Iterable[str | None], known: Mapping[Actor, str] | None = None) -> Names:
    """The names behind ``refs`` (stored actor references, or labels that are none): one query
    for those not in ``known`` (names the caller already holds: the viewer's username, the
    todo's endpoint), none when every one is known or needs no name."""
    found: dict[Actor, str] = dict(known or {})
    humans: set[int] = set()
    endpoints: set[str] = set()
    for ref in refs:
        actor = Actor.parse_or_none(ref)
        if actor is None or not actor.needs_name:
            continue
        if actor.kind == HUMAN:
            if actor not in found:
                humans.add(int(actor.key))
        elif Actor(ENDPOINT, actor.key) not in found:
            endpoints.add(actor.key)
    if humans or endpoints:
        rows = fetch_all(_NAMES, {"human_ids": sorted(humans), "endpoint_ids": sorted(endpoints)})
        for row in rows:
            found[Actor(row["kind"], row["key"])] = row["name"]
    return Names(found)
