"""Demo data for a first run: an operator, an agent endpoint, a webhook source and a dozen todos.

Every todo reaches its state through ``todos.lifecycle``, as an agent or the sweeper would
bring it there, so the Board shows real attempt histories. The one shortcut is the one the
tests take: a lease is expired by moving ``lease_expires_at`` into the past, because a demo
cannot wait out a lease and moving Python's clock does not move PostgreSQL's ``now()``.

Seeding is one transaction under an advisory lock: two processes started together (two ``serve``
replicas on one database) seed once, and a failure leaves nothing behind, so ``--if-empty`` never
mistakes a half-seeded database for a seeded one.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from django.db import connection, transaction

from switchboard.credentials import create_endpoint, mint_key, revoke_keys, touch_key
from switchboard.models import DRAIN_VERBS, Endpoint, EndpointKey, Human
from switchboard.scope import Scope
from todos import lifecycle
from todos.intake.sources import create_rule, create_source, rotate_secret
from todos.models import Source

USERNAME = "demo"
ENDPOINT_SLUG = "demo-agent"
SOURCE_SLUG = "demo-ci"
CI_QUEUE = "ci-failures"
TRIAGE_QUEUE = "triage"
# The lease holder the demo agent claims as; each run of it names itself in ``claimant``.
BOT = "demo-bot"
# Long enough that the sweeper of a demo server does not reap the claimed todo while someone
# is still looking at it; real agents hold short leases and heartbeat.
DEMO_LEASE_SECONDS = 4 * 3600
# Keeps the "retry scheduled" todo in that state for the demo's first hour instead of the
# default backoff's thirty seconds.
DEMO_RETRY_AFTER_SECONDS = 3600
_LOCK_KEY = "switchboard.seed_demo"
# How long ago each demo todo was created, in minutes: seeded in one transaction they would all
# read "30 s ago" (_spread). The claimed one was taken 12 minutes ago, and its agent's key was
# used just now, as an agent holding a lease and heartbeating would have used it.
AGES_MINUTES = {
    "completed": 95,
    "retry_scheduled": 70,
    "dead_letter": 52,
    "canceled": 45,
    "died": 38,
    "claimed": 12,
    "pending_1": 9,
    "pending_2": 7,
    "pending_3": 5,
    "pending_4": 3,
    "pending_5": 2,
    "pending_6": 1,
}
# Moves every past instant of each todo (its own, its attempts' and its activity rows') back by
# its age, so each history keeps its order; deadlines ahead (a live lease, the next retry) stay.
_SPREAD = """
WITH age AS (
    SELECT a.todo_id, a.minutes * interval '1 minute' AS ago
      FROM unnest(%(ids)s::text[], %(minutes)s::int[]) AS a(todo_id, minutes)
),
moved_todos AS (
    UPDATE todos t
       SET created_at = t.created_at - age.ago, updated_at = t.updated_at - age.ago,
           claimed_at = t.claimed_at - age.ago, finished_at = t.finished_at - age.ago,
           attempt_heartbeat_at = t.attempt_heartbeat_at - age.ago
      FROM age WHERE t.id = age.todo_id
),
moved_attempts AS (
    UPDATE todo_attempts x
       SET claimed_at = x.claimed_at - age.ago,
           last_heartbeat_at = x.last_heartbeat_at - age.ago,
           ended_at = x.ended_at - age.ago,
           lease_expires_at = CASE WHEN x.ended_at IS NULL THEN x.lease_expires_at
                                   ELSE x.lease_expires_at - age.ago END
      FROM age WHERE x.todo_id = age.todo_id
)
UPDATE todo_activity y SET at = y.at - age.ago FROM age WHERE y.todo_id = age.todo_id
"""
# The demo source's rule: GitHub check_run deliveries that failed (docs/guides/webhooks.md).
CI_FAILURE_MATCH = {
    "headers": {"X-GitHub-Event": "check_run"},
    "payload": {
        "action": "completed",
        "check_run.conclusion": {"in": ["failure", "timed_out"]},
        "repository.full_name": {"exists": True},
    },
}


class AlreadySeeded(Exception):
    """The demo operator exists already; seeding again would collide with it."""


class NotSeeded(Exception):
    """There is no demo to re-issue credentials for (or a part of it was deleted)."""


@dataclass(frozen=True, slots=True)
class Reissued:
    """The demo's new credentials, shown once; the old key and secret no longer work."""

    username: str
    password: str
    key: str
    webhook_secret: str
    keys_revoked: int


@dataclass(frozen=True, slots=True)
class Seeded:
    """What seeding created, including the credentials shown once to whoever ran it."""

    username: str
    password: str
    key: str
    webhook_secret: str
    todo_ids: dict[str, str]


def seed(password: str | None = None, *, if_empty: bool = False) -> Seeded | None:
    """Create the demo data; return None when ``if_empty`` and an operator exists already.

    ``password`` is the demo operator's; None generates one (returned, to be shown once).
    """
    with transaction.atomic():
        with connection.cursor() as cur:
            # Held to commit: a second seeder waits here, then finds the first one's operator.
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [_LOCK_KEY])
        if if_empty and Human.objects.exists():
            return None
        if Human.objects.filter(username=USERNAME).exists():
            raise AlreadySeeded(f"an operator named {USERNAME!r} exists already")
        return _seed(password or secrets.token_urlsafe(12))


def reissue(password: str | None = None) -> Reissued:
    """Give the demo new credentials, for whoever lost the ones printed when it was seeded.

    The operator gets ``password`` (None generates one), the demo endpoint a new key while every
    other key of it is revoked, and the demo source a new secret; all in one transaction, so a
    failure changes nothing. Raise ``NotSeeded`` when the operator, endpoint or source is gone.
    """
    with transaction.atomic():
        human = Human.objects.select_for_update().filter(username=USERNAME).first()
        endpoint = Endpoint.objects.filter(
            owner=human, slug=ENDPOINT_SLUG, revoked_at__isnull=True
        ).first()
        source = Source.objects.filter(owner=human, slug=SOURCE_SLUG).first()
        if human is None or endpoint is None or source is None:
            missing = [
                what
                for what, row in (
                    (f"operator {USERNAME!r}", human),
                    (f"live endpoint {ENDPOINT_SLUG!r}", endpoint),
                    (f"source {SOURCE_SLUG!r}", source),
                )
                if row is None
            ]
            raise NotSeeded("no demo to re-issue: missing " + ", ".join(missing))
        password = password or secrets.token_urlsafe(12)
        human.set_password(password)
        human.save(update_fields=["password"])
        revoked = revoke_keys(EndpointKey.objects.filter(endpoint=endpoint))
        _, key = mint_key(endpoint)
        webhook_secret = rotate_secret(source)
    return Reissued(USERNAME, password, key, webhook_secret, revoked)


def _seed(password: str) -> Seeded:
    # A superuser, so the admin login the summary offers shows every model.
    human = Human.objects.create_user(
        USERNAME,
        email="demo@example.test",
        password=password,
        is_staff=True,
        is_superuser=True,
    )
    endpoint, key_row, key = create_endpoint(
        human, name="Demo agent", slug=ENDPOINT_SLUG, verbs=DRAIN_VERBS
    )
    source, webhook_secret = create_source(human, SOURCE_SLUG, name="Demo CI")
    assert webhook_secret is not None
    create_rule(
        source,
        endpoint,
        name="CI failures to the demo agent",
        queue=CI_QUEUE,
        match=CI_FAILURE_MATCH,
        title_template="Fix {{ check_run.name }} on {{ repository.full_name }}",
        work_order_template=(
            "The check {{ check_run.name }} ended {{ check_run.conclusion }}: "
            "{{ check_run.html_url }}\nFind the cause and fix it; do not skip the test."
        ),
        max_attempts=3,
    )
    todo_ids = _todos(endpoint.id, human.id)
    _spread(todo_ids)
    # The demo agent's claims were made with its key: "last seen" agrees with the claim it holds.
    touch_key(key_row)
    return Seeded(USERNAME, password, key, webhook_secret, todo_ids)


def _spread(todo_ids: dict[str, str]) -> None:
    """Age the demo's todos as if they had arrived over the last hour and a half
    (``AGES_MINUTES``). Moving clocks is the module's one shortcut."""
    labels = [label for label in AGES_MINUTES if label in todo_ids]
    with connection.cursor() as cur:
        cur.execute(
            _SPREAD,
            {
                "ids": [todo_ids[label] for label in labels],
                "minutes": [AGES_MINUTES[label] for label in labels],
            },
        )


def _todos(endpoint_id: UUID, human_id: int) -> dict[str, str]:
    """A dozen todos in assorted states, by label. Each claim_next below finds exactly the todo
    just created claimable on its queue, so which todo it takes does not depend on timing."""
    ids: dict[str, str] = {}

    def new(label: str, queue: str, title: str, **kwargs: Any) -> str:
        todo = lifecycle.create(endpoint_id, queue=queue, title=title, **kwargs)
        ids[label] = todo.id
        return todo.id

    def take(queue: str, run: str, **kwargs: Any) -> str:
        claim = lifecycle.claim_next(
            endpoint_id, [queue], owner=BOT, claimant=f"{BOT}/{run}", **kwargs
        )
        assert claim is not None, f"the demo todo on {queue} was not claimable"
        return claim.todo.id

    # Completed, with a summary and an artifact a later reader can follow.
    new(
        "completed",
        CI_QUEUE,
        "Fix flaky test_checkout_total in the payments suite",
        payload={"repo": "example/shop", "run_id": 8812, "job": "test (3.12)"},
        work_order="Find why the test fails one run in ten and fix the cause, not the symptom.",
    )
    lifecycle.complete(
        endpoint_id,
        take(CI_QUEUE, "run-2"),
        owner=BOT,
        result={"pull_request": 101, "root_cause": "rounding in a fixture"},
        summary="The fixture rounded prices before summing; fixed it and added a regression test.",
        artifact="https://github.com/example/shop/pull/101",
    )

    # Failed once, retry scheduled (budget left).
    new(
        "retry_scheduled",
        CI_QUEUE,
        "Build fails on main: image push denied",
        payload={"repo": "example/shop", "run_id": 8815, "job": "docker"},
        max_attempts=3,
    )
    lifecycle.fail(
        endpoint_id,
        take(CI_QUEUE, "run-3"),
        owner=BOT,
        summary="Registry answered 403 on push; the CI token may have expired. Trying again.",
        retry_after_seconds=DEMO_RETRY_AFTER_SECONDS,
    )

    # Failed with its budget spent: dead-lettered.
    new(
        "dead_letter",
        TRIAGE_QUEUE,
        "Triage issue #311: login redirects in a loop",
        payload={"issue": 311, "labels": ["bug", "auth"]},
        max_attempts=1,
    )
    lifecycle.fail(
        endpoint_id,
        take(TRIAGE_QUEUE, "run-4"),
        owner=BOT,
        summary="Cannot reproduce without production SSO settings; needs a human.",
    )

    # Canceled by its operator before anyone took it.
    canceled = new("canceled", TRIAGE_QUEUE, "Triage issue #310: login loop (duplicate)")
    lifecycle.cancel(Scope.of_human(human_id), canceled, reason="Duplicate of #311.")

    # An attempt that died: the agent vanished, its lease lapsed and the reaper requeued the
    # todo (reaped/requeued). The UPDATE is the shortcut the module docstring describes; reap
    # is the real sweep, and in a freshly seeded database this lease is the only lapsed one.
    new("died", TRIAGE_QUEUE, "Triage issue #315: search is slow for long queries")
    died = take(TRIAGE_QUEUE, "run-0")
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE todos SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
            [died],
        )
    lifecycle.reap()

    # Claimed by the agent right now.
    new(
        "claimed",
        CI_QUEUE,
        "Lint errors in the checkout service",
        payload={"repo": "example/shop", "run_id": 8820, "job": "lint"},
    )
    take(CI_QUEUE, "run-1", lease_ttl_seconds=DEMO_LEASE_SECONDS)

    # Waiting on both queues.
    pending = [
        (CI_QUEUE, "Test timeout in integration/orders", {"run_id": 8823, "job": "integration"}),
        (CI_QUEUE, "Type check fails after the Django upgrade", {"run_id": 8824, "job": "mypy"}),
        (CI_QUEUE, "Coverage dropped below 85%", {"run_id": 8825, "job": "coverage"}),
        (CI_QUEUE, "Docs build warns about a broken link", {"run_id": 8826, "job": "docs"}),
        (TRIAGE_QUEUE, "Triage issue #318: dark mode contrast", {"issue": 318}),
        (TRIAGE_QUEUE, "Triage issue #320: CSV export drops accents", {"issue": 320}),
    ]
    for n, (queue, title, payload) in enumerate(pending, start=1):
        new(f"pending_{n}", queue, title, payload=payload)
    return ids
