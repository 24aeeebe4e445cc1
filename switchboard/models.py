"""Tenancy: humans (operators), teams of them, endpoints (agent identities) and their keys;
runtime settings.

What a human sees is owned by a human or by a team (``Owned``: exactly one of ``owner`` and
``team``, a CHECK in the database); the members of the owning team see and act on it as its
owner does (``switchboard/scope.py``, docs/decisions/0034-teams.md).

An endpoint's slug names it in every agent-facing URL (``/mcp/{slug}``, ``/otlp/{slug}/…``);
its verbs are its scope. A key is ``sbk_`` + 32 random bytes (base64url), shown once; only its
SHA-256 is stored (``switchboard.credentials`` mints and resolves them).
"""

from __future__ import annotations

import uuid
from decimal import Decimal

from django.contrib.auth.models import AbstractUser
from django.contrib.postgres.fields import ArrayField
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.db.models.functions import Length
from django.db.models.lookups import Exact


class Human(AbstractUser):
    """An operator: logs in to the Board and owns endpoints (and through them, todos)."""

    # When the human last opened the Activity feed; NULL until then (migrations/0002).
    activity_seen_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        db_table = "humans"
        verbose_name = "human"
        verbose_name_plural = "humans"

    def __str__(self) -> str:
        return self.username


class Verb(models.TextChoices):
    """What an endpoint may do: MCP tools (docs/guides/agents.md), and ``a2a``, which opens
    ``/a2a/{slug}`` to requesters (docs/guides/a2a.md)."""

    LIST_TODOS = "list_todos"
    GET_TODO = "get_todo"
    CLAIM_NEXT = "claim_next"
    CLAIM = "claim"
    HEARTBEAT = "heartbeat"
    COMPLETE = "complete"
    FAIL = "fail"
    RELEASE = "release"
    # The holder of an A2A task asks its requester for input, or refuses the task.
    REQUEST_INPUT = "request_input"
    REJECT = "reject"
    # Not a tool: requesters may send messages to this endpoint at /a2a/{slug}.
    A2A = "a2a"
    # A requester over MCP: submit_todo (with Tasks for clients that speak them) and the
    # tasks/* methods (docs/guides/requesters.md). Off by default, like a2a.
    SUBMIT = "submit"


# What the vend wizard and create_endpoint grant by default: everything a draining agent needs.
DRAIN_VERBS: tuple[str, ...] = (
    Verb.LIST_TODOS,
    Verb.GET_TODO,
    Verb.CLAIM_NEXT,
    Verb.CLAIM,
    Verb.HEARTBEAT,
    Verb.COMPLETE,
    Verb.FAIL,
    Verb.RELEASE,
)
# What an endpoint that fronts its agents as one A2A agent needs on top: the requester's door
# and the holder's two A2A tools.
A2A_VERBS: tuple[str, ...] = (Verb.REQUEST_INPUT, Verb.REJECT, Verb.A2A)


# Slugs name endpoints and sources in URLs: lowercase, digits, '-' and '_' (a CHECK enforces it).
# SLUG_PATTERN is the rule without anchors, for a pattern that sets a slug inside a path.
SLUG_PATTERN = r"[a-z0-9][a-z0-9_-]*"
SLUG_RE = rf"^{SLUG_PATTERN}$"
slug_validator = RegexValidator(
    SLUG_RE, "Use lowercase letters, digits, '-' and '_', starting with a letter or digit."
)


class Team(models.Model):
    """A group of humans that owns endpoints and sources together (written by
    ``switchboard.teams`` only). Its name follows the slug rules (a CHECK enforces it)."""

    name = models.SlugField(max_length=64, unique=True, validators=[slug_validator])
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "teams"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TeamRole(models.TextChoices):
    """A member sees and acts on everything the team owns; an admin also manages its
    membership, vends and revokes its endpoints' keys and moves endpoints into it."""

    MEMBER = "member"
    ADMIN = "admin"


class TeamMember(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    # No index of its own: the unique (human, team) leads with it.
    human = models.ForeignKey(
        Human, on_delete=models.CASCADE, related_name="memberships", db_index=False
    )
    role = models.TextField(choices=TeamRole.choices, default=TeamRole.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "team_members"
        ordering = ["team", "human"]
        constraints = [
            # (human, team): the scope's membership read is an index-only probe by human.
            models.UniqueConstraint(fields=["human", "team"], name="team_members_human_team_key"),
            models.CheckConstraint(
                condition=Q(role__in=TeamRole.values), name="team_members_known_role"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.human} in {self.team} ({self.role})"


class Owned(models.Model):
    """Owned by a human or by a team, exactly one (the CHECK ``<class>_owned_once``).

    Endpoints and sources are; a schedule is owned through its endpoint. A new kind of owned
    thing inherits this (and its ``Meta``) and reads through ``switchboard.scope``.
    """

    owner = models.ForeignKey(
        Human, on_delete=models.PROTECT, null=True, blank=True, related_name="%(class)ss"
    )
    team = models.ForeignKey(
        Team, on_delete=models.PROTECT, null=True, blank=True, related_name="%(class)ss"
    )

    class Meta:
        abstract = True
        constraints = [
            models.CheckConstraint(
                condition=Q(owner__isnull=False, team__isnull=True)
                | Q(owner__isnull=True, team__isnull=False),
                name="%(class)s_owned_once",
            )
        ]

    @property
    def owner_label(self) -> str:
        """Who owns it, as the Board says it: the human's username or "team <name>"."""
        if self.team_id is not None:
            return f"team {self.team}"
        return str(self.owner)


class EndpointQuerySet(models.QuerySet["Endpoint"]):
    def active(self) -> EndpointQuerySet:
        return self.filter(revoked_at__isnull=True)


class Endpoint(Owned):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=64, unique=True, validators=[slug_validator])
    name = models.TextField()
    verbs = ArrayField(models.TextField(choices=Verb.choices), default=list, blank=True)
    push_url = models.URLField(max_length=2048, null=True, blank=True)
    # What push rings are signed with (todos/push.py); minted and shown once by credentials.py.
    push_secret = models.TextField(blank=True, db_default="", default="", editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The endpoint's daily budget (UTC day) over all its queues: past it the sweeper pauses
    # every queue of it until the next day (todos/budgets.py). NULL: none.
    daily_budget_usd = models.DecimalField(
        max_digits=14,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal(0))],
    )

    objects = EndpointQuerySet.as_manager()

    class Meta(Owned.Meta):
        db_table = "endpoints"
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def allows(self, verb: str) -> bool:
        """Whether the endpoint's scope holds ``verb``; get_todo is implied by list_todos, and by
        submit (a requester follows what it submitted)."""
        if verb == Verb.GET_TODO:
            return any(v in self.verbs for v in (Verb.GET_TODO, Verb.LIST_TODOS, Verb.SUBMIT))
        return verb in self.verbs


class EndpointKey(models.Model):
    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="keys")
    prefix = models.TextField(editable=False)
    key_hash = models.BinaryField(unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        db_table = "endpoint_keys"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}…"


class Setting(models.Model):
    """A runtime setting that overrides its default in code (``switchboard.runtime_settings``)."""

    key = models.TextField(primary_key=True)
    value = models.JSONField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "settings"
        ordering = ["key"]

    def __str__(self) -> str:
        return self.key


class SpentCode(models.Model):
    """An OAuth authorization code that has been exchanged, by its SHA-256 (the code itself is
    never kept), with what that exchange issued: the access token's id and the family of its
    refresh token (every rotation stays in it). django-oauth-toolkit deletes a code's grant when
    it is exchanged, so without this row a second exchange of the same code could only be
    refused; with it, it also revokes what the first one issued (RFC 6749 §4.1.2,
    ``switchboard/oauth.py``). No foreign keys: the toolkit deletes its tokens in batches of its
    own, and a row whose tokens are gone is pruned by the sweeper's retention
    (``oauth.clear_expired_tokens``)."""

    digest = models.BinaryField(primary_key=True, editable=False)
    access_token_id = models.BigIntegerField(null=True, editable=False)
    token_family = models.UUIDField(null=True, editable=False)
    spent_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "oauth_spent_codes"
        constraints = [
            models.CheckConstraint(
                condition=Exact(Length("digest"), 32), name="oauth_spent_codes_digest_check"
            )
        ]

    def __str__(self) -> str:
        return f"code {bytes(self.digest[:6]).hex()}…"
