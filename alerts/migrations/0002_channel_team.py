"""An alert channel is owned by a human or by a team, as endpoints and sources are (switchboard
0006_teams, todos 0021_source_team, docs/decisions/0034-teams.md): ``alert_channels.owner_id``
nullable beside a new ``alert_channels.team_id``, exactly one set (``alertchannel_owned_once``).

Written by hand for its reverse: going back, a team's channel is handed to one of the team's
admins (any member if none is left, as ``switchboard.scope.acting_human`` picks), so the owner
column can be made NOT NULL again; a channel of a team with no member left stops the reverse
with an error naming it, changing nothing.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

# Reverse only: back to a human owner each, before the CHECK and the column's NULL go. The new
# owner's deferred foreign-key check is run at once: ALTER TABLE refuses a table with pending
# trigger events.
HAND_BACK = """
UPDATE alert_channels c
   SET owner_id = (SELECT m.human_id FROM team_members m
                    WHERE m.team_id = c.team_id
                    ORDER BY m.role, m.id
                    LIMIT 1),
       team_id = NULL
 WHERE c.team_id IS NOT NULL
   AND EXISTS (SELECT 1 FROM team_members m WHERE m.team_id = c.team_id);
DO $$
DECLARE orphan uuid;
BEGIN
    SELECT c.id INTO orphan FROM alert_channels c WHERE c.team_id IS NOT NULL LIMIT 1;
    IF orphan IS NOT NULL THEN
        RAISE EXCEPTION 'alert channel % belongs to a team with no member left: give it a human'
                        ' owner (or delete it) before reversing alerts 0002', orphan;
    END IF;
END $$;
SET CONSTRAINTS ALL IMMEDIATE;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("alerts", "0001_alerts"),
        ("switchboard", "0006_teams"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="alertchannel",
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
            model_name="alertchannel",
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
            model_name="alertchannel",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("owner__isnull", False), ("team__isnull", True)),
                    models.Q(("owner__isnull", True), ("team__isnull", False)),
                    _connector="OR",
                ),
                name="alertchannel_owned_once",
            ),
        ),
        migrations.RunSQL(migrations.RunSQL.noop, reverse_sql=HAND_BACK, elidable=False),
    ]
