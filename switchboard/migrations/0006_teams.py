"""Teams: an endpoint is owned by a human or by a team (docs/decisions/0034-teams.md).

``teams`` and ``team_members`` (a member or an admin, once per team: the unique (human, team)
serves the scope's membership read, ``switchboard/scope.py``); ``endpoints.owner_id`` becomes
nullable beside a new ``endpoints.team_id``, exactly one of them set (``endpoint_owned_once``).
A team's name follows the slug rules, checked in the database as an endpoint's slug is.
Reversing it needs every endpoint back with a human owner: the NOT NULL is restored then.
"""

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("switchboard", "0005_submit_verb"),
    ]

    operations = [
        migrations.CreateModel(
            name="Team",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "name",
                    models.SlugField(
                        max_length=64,
                        unique=True,
                        validators=[
                            django.core.validators.RegexValidator(
                                "^[a-z0-9][a-z0-9_-]*$",
                                "Use lowercase letters, digits, '-' and '_', starting with a letter or digit.",
                            )
                        ],
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "db_table": "teams",
                "ordering": ["name"],
            },
        ),
        migrations.CreateModel(
            name="TeamMember",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "role",
                    models.TextField(
                        choices=[("member", "Member"), ("admin", "Admin")], default="member"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True)),
            ],
            options={
                "db_table": "team_members",
                "ordering": ["team", "human"],
            },
        ),
        migrations.AlterField(
            model_name="endpoint",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="%(class)ss",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="endpoint",
            name="team",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="%(class)ss",
                to="switchboard.team",
            ),
        ),
        migrations.AddConstraint(
            model_name="endpoint",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("owner__isnull", False), ("team__isnull", True)),
                    models.Q(("owner__isnull", True), ("team__isnull", False)),
                    _connector="OR",
                ),
                name="endpoint_owned_once",
            ),
        ),
        migrations.AddField(
            model_name="teammember",
            name="human",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                db_index=False,
                related_name="memberships",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="teammember",
            name="team",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="memberships",
                to="switchboard.team",
            ),
        ),
        migrations.AddConstraint(
            model_name="teammember",
            constraint=models.UniqueConstraint(
                fields=("human", "team"), name="team_members_human_team_key"
            ),
        ),
        migrations.AddConstraint(
            model_name="teammember",
            constraint=models.CheckConstraint(
                condition=models.Q(("role__in", ["member", "admin"])),
                name="team_members_known_role",
            ),
        ),
        migrations.RunSQL(
            "ALTER TABLE teams ADD CONSTRAINT teams_name_format"
            " CHECK (name ~ '^[a-z0-9][a-z0-9_-]*$')",
            "ALTER TABLE teams DROP CONSTRAINT teams_name_format",
        ),
    ]
