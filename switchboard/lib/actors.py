"""Who acted: one value type, one spelling in the database (docs/decisions/0030-one-actor.md).

An actor is written wherever a row says who did something: ``todo_activity.actor_ref``,
``queue_pauses.paused_by`` / ``resumed_by``, a lease's owner (``todos.owner``,
``todo_attempts.owner``: an operator's, or MCP's for its endpoint) and an answer's ``from``.
Its spellings, one per kind:

- ``human:<id>``: a human (the Board, the admin, a command run with ``--as``);
- ``endpoint:<uuid>``: an endpoint's agent, over MCP (its leases, notes, interrupt, reject);
- ``requester:<uuid>``: the A2A requester of an endpoint (``/a2a/<slug>``: its answer, its cancel);
  the uuid is the endpoint's, since a requester holds that endpoint's key and is known by no more;
- ``sweeper``: the sweeper's passes (requeue, its rings);
- ``doorbell``: an MCP process's doorbell ringing a todo's subscribers;
- ``command:<name>``: a management command run without ``--as`` (``command:queue``).

An agent's own label (the ``claimant`` it claims with) is its text, kept as given: it is not an
actor and never parsed here; nor is an owner a direct caller of the lifecycle chose.
``str(actor)`` is the stored spelling, ``Actor.parse`` reads it back, ``column_kind`` is the
coarse ``actor_kind`` column beside it, and ``label`` is how people read it once
``switchboard/actors.py`` has looked the name up.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Self

HUMAN = "human"
ENDPOINT = "endpoint"
REQUESTER = "requester"
SWEEPER = "sweeper"
DOORBELL = "doorbell"
COMMAND = "command"

# The kinds that carry a key after the colon, and the ones that are the whole spelling.
_KEYED = (HUMAN, ENDPOINT, REQUESTER, COMMAND)
_BARE = (SWEEPER, DOORBELL)

# The coarse column stored beside the reference (todo_activity.actor_kind, queue_pauses'
# *_by_kind): its CHECK lists predate the finer kinds, and the feed's filters read it.
_COLUMN_KIND = {
    HUMAN: "human",
    ENDPOINT: "endpoint",
    REQUESTER: "endpoint",
    SWEEPER: "system",
    DOORBELL: "system",
    COMMAND: "system",
}

# A human id is a bigint; a command name is a management command's (manage.py <name>).
_HUMAN_ID = re.compile(r"[1-9][0-9]{0,17}")
_COMMAND_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


class InvalidActor(ValueError):
    """The text is not an actor's spelling."""


@dataclass(frozen=True, slots=True)
class Actor:
    """One actor: its kind and, for a keyed kind, its key (as spelled after the colon)."""

    kind: str
    key: str = ""

    def __post_init__(self) -> None:
        if self.kind in _BARE:
            if self.key:
                raise InvalidActor(f"{self.kind} takes no key")
        elif self.kind not in _KEYED:
            raise InvalidActor(f"unknown actor kind {self.kind!r}")
        elif self.kind == HUMAN and not _HUMAN_ID.fullmatch(self.key):
            raise InvalidActor(f"human id must be a positive integer, not {self.key!r}")
        elif self.kind in (ENDPOINT, REQUESTER) and not _is_uuid(self.key):
            raise InvalidActor(f"{self.kind} key must be a lowercase uuid, not {self.key!r}")
        elif self.kind == COMMAND and not _COMMAND_NAME.fullmatch(self.key):
            raise InvalidActor(f"command name must match {_COMMAND_NAME.pattern}")

    # --- constructors ---------------------------------------------------------------------------

    @classmethod
    def human(cls, human_id: int) -> Self:
        return cls(HUMAN, str(int(human_id)))

    @classmethod
    def endpoint(cls, endpoint_id: uuid.UUID | str) -> Self:
        return cls(ENDPOINT, str(uuid.UUID(str(endpoint_id))))

    @classmethod
    def requester(cls, endpoint_id: uuid.UUID | str) -> Self:
        """The A2A requester of the endpoint ``endpoint_id``."""
        return cls(REQUESTER, str(uuid.UUID(str(endpoint_id))))

    @classmethod
    def sweeper(cls) -> Self:
        return cls(SWEEPER)

    @classmethod
    def doorbell(cls) -> Self:
        return cls(DOORBELL)

    @classmethod
    def command(cls, name: str) -> Self:
        """A management command run by no human (``manage.py <name>`` without ``--as``)."""
        return cls(COMMAND, name)

    @classmethod
    def parse(cls, text: str) -> Self:
        """The actor ``text`` spells; ``InvalidActor`` if it spells none."""
        if text in _BARE:
            return cls(text)
        kind, sep, key = text.partition(":")
        if not sep or kind not in _KEYED:
            raise InvalidActor(f"not an actor: {text[:80]!r}")
        return cls(kind, key)

    @classmethod
    def parse_or_none(cls, text: str | None) -> Self | None:
        """``parse``, or None for text that is no actor (an agent's label, a legacy spelling)."""
        if not text:
            return None
        try:
            return cls.parse(text)
        except InvalidActor:
            return None

    # --- reading --------------------------------------------------------------------------------

    def __str__(self) -> str:
        return f"{self.kind}:{self.key}" if self.key else self.kind

    @property
    def column_kind(self) -> str:
        """The coarse kind stored beside the reference: ``human``, ``endpoint`` or ``system``."""
        return _COLUMN_KIND[self.kind]

    @property
    def human_id(self) -> int | None:
        return int(self.key) if self.kind == HUMAN else None

    @property
    def endpoint_id(self) -> uuid.UUID | None:
        """The endpoint an endpoint or a requester acts for."""
        return uuid.UUID(self.key) if self.kind in (ENDPOINT, REQUESTER) else None

    @property
    def needs_name(self) -> bool:
        """Whether ``label`` needs a name looked up (a human's, an endpoint's)."""
        return self.kind in (HUMAN, ENDPOINT, REQUESTER)

    def label(self, name: str | None = None) -> str:
        """How people read the actor, given the looked-up ``name`` (None: not found)."""
        if self.kind == HUMAN:
            return name or "a deleted operator"
        if self.kind == ENDPOINT:
            return name or "a deleted endpoint"
        if self.kind == REQUESTER:
            return f"requester via {name}" if name else "requester via a deleted endpoint"
        if self.kind == COMMAND:
            return f"command {self.key}"
        return self.kind


def _is_uuid(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False
