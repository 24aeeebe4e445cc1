"""todo_attempts: one row per committed claim, closed by whatever ends the lease.

One deliberate difference from a plain design: claimer_endpoint_id carries no foreign
key. Every claim would otherwise take FOR KEY SHARE on one hot ``endpoints`` row (MultiXacts
under concurrency; docs/decisions/0007-no-claimer-fk.md), and the key adds no safety here: an
endpoint claimer is always the todo's own endpoint, which ``todos.endpoint_id`` already keeps
alive, and an attempt lives exactly as long as its todo (ON DELETE CASCADE below).
"""

import django.db.models.deletion
import django.db.models.functions.datetime
from django.db import migrations, models

FORWARD = """
CREATE TABLE todo_attempts (
    todo_id             text        NOT NULL REFERENCES todos(id) ON DELETE CASCADE,
    seq                 int         NOT NULL,
    attempt             int         NOT NULL,
    claimer_kind        text        NOT NULL CHECK (claimer_kind IN ('endpoint','owner')),
    claimer_endpoint_id uuid,
    claimer_session     text,
    owner               text        NOT NULL,
    claimant            text        CHECK (octet_length(claimant) <= 128),
    claimed_at          timestamptz NOT NULL DEFAULT now(),
    last_heartbeat_at   timestamptz,
    lease_expires_at    timestamptz NOT NULL,
    ended_at            timestamptz,
    outcome             text CHECK (outcome IN ('completed','failed','released','lease_expired',
                                                'reaped','canceled','revoked')),
    disposition         text CHECK (disposition IN ('done','retry_scheduled','requeued',
                                                    'dead_lettered','canceled')),
    summary             text        CHECK (octet_length(summary) <= 2048),
    summary_truncated   boolean     NOT NULL DEFAULT false,
    artifact            text        CHECK (octet_length(artifact) <= 512),
    lease_token_hash    bytea       CHECK (octet_length(lease_token_hash) = 32),
    PRIMARY KEY (todo_id, seq),
    CHECK ((ended_at IS NULL) = (outcome IS NULL)),
    CHECK ((ended_at IS NULL) = (disposition IS NULL))
);

-- At most one open attempt per todo, checked at COMMIT. A plain unique partial
-- index would be checked row by row, and the order in which a statement's data-modifying CTEs run
-- is unspecified, so a takeover's INSERT of the new attempt could be checked before its UPDATE
-- closing the old one. A deferred exclusion constraint sees only the committed result.
ALTER TABLE todo_attempts ADD CONSTRAINT todo_attempts_one_open
    EXCLUDE USING btree (todo_id WITH =) WHERE (ended_at IS NULL)
    DEFERRABLE INITIALLY DEFERRED;

-- Backfill: one open attempt per in-flight lease.
UPDATE todos SET attempts_total = 1 WHERE state IN ('claimed','input-required','auth-required');
INSERT INTO todo_attempts (todo_id, seq, attempt, claimer_kind, owner, claimant, claimed_at,
                           lease_expires_at)
SELECT id, 1, attempt, 'endpoint', COALESCE(owner, ''), 'migrated', COALESCE(claimed_at, now()),
       COALESCE(lease_expires_at, now())
FROM todos WHERE state IN ('claimed','input-required','auth-required');
"""

# Undo the backfill's counter, then the table; history recorded since is lost, by design.
REVERSE = """
UPDATE todos SET attempts_total = 0, attempts_pruned = 0;
DROP TABLE todo_attempts;
"""


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("switchboard", "0001_initial"),
        ("todos", "0002_attempt_counters"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[
                migrations.CreateModel(
                    name="TodoAttempt",
                    fields=[
                        (
                            "pk",
                            models.CompositePrimaryKey(
                                "todo_id",
                                "seq",
                                blank=True,
                                editable=False,
                                primary_key=True,
                                serialize=False,
                            ),
                        ),
                        ("seq", models.IntegerField()),
                        ("attempt", models.IntegerField()),
                        (
                            "claimer_kind",
                            models.TextField(
                                choices=[("endpoint", "Endpoint"), ("owner", "Owner")]
                            ),
                        ),
                        ("claimer_session", models.TextField(blank=True, null=True)),
                        ("owner", models.TextField()),
                        ("claimant", models.TextField(blank=True, null=True)),
                        (
                            "claimed_at",
                            models.DateTimeField(
                                db_default=django.db.models.functions.datetime.Now()
                            ),
                        ),
                        ("last_heartbeat_at", models.DateTimeField(blank=True, null=True)),
                        ("lease_expires_at", models.DateTimeField()),
                        ("ended_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "outcome",
                            models.TextField(
                                blank=True,
                                choices=[
                                    ("completed", "Completed"),
                                    ("failed", "Failed"),
                                    ("released", "Released"),
                                    ("lease_expired", "Lease Expired"),
                                    ("reaped", "Reaped"),
                                    ("canceled", "Canceled"),
                                    ("revoked", "Revoked"),
                                ],
                                null=True,
                            ),
                        ),
                        (
                            "disposition",
                            models.TextField(
                                blank=True,
                                choices=[
                                    ("done", "Done"),
                                    ("retry_scheduled", "Retry Scheduled"),
                                    ("requeued", "Requeued"),
                                    ("dead_lettered", "Dead Lettered"),
                                    ("canceled", "Canceled"),
                                ],
                                null=True,
                            ),
                        ),
                        ("summary", models.TextField(blank=True, null=True)),
                        ("summary_truncated", models.BooleanField(db_default=False, default=False)),
                        ("artifact", models.TextField(blank=True, null=True)),
                        ("lease_token_hash", models.BinaryField(blank=True, null=True)),
                        (
                            "claimer_endpoint",
                            models.ForeignKey(
                                blank=True,
                                db_constraint=False,
                                null=True,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="+",
                                to="switchboard.endpoint",
                            ),
                        ),
                        (
                            "todo",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="attempts",
                                to="todos.todo",
                            ),
                        ),
                    ],
                    options={"db_table": "todo_attempts", "ordering": ["todo_id", "-seq"]},
                ),
            ],
        ),
    ]
