"""A source is owned by a human or by a team, as an endpoint is (switchboard 0006_teams,
docs/decisions/0034-teams.md): ``sources.owner_id`` nullable beside ``sources.team_id``,
exactly one set (``source_owned_once``)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("switchboard", "0006_teams"),
        ("todos", "0020_todo_holds_limited_slot"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="source",
            name="team",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="%(class)ss",
                to="switchboard.team",
            ),
        ),
        migrations.AlterField(
            model_name="source",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="%(class)ss",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddConstraint(
            model_name="source",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("owner__isnull", False), ("team__isnull", True)),
                    models.Q(("owner__isnull", True), ("team__isnull", False)),
                    _connector="OR",
                ),
                name="source_owned_once",
            ),
        ),
    ]
