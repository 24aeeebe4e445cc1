"""The admin names queue settings in the plural as people do ("queue settings", not
"queue settingss"); the schema is unchanged."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("todos", "0027_schedules_five_fields")]

    operations = [
        migrations.AlterModelOptions(
            name="queuesettings",
            options={"ordering": ["endpoint", "queue"], "verbose_name_plural": "queue settings"},
        ),
    ]
