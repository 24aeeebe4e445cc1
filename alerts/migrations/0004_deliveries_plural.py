"""The admin names alert deliveries in the plural as people do ("alert deliveries", not
"alert deliverys"); the schema is unchanged."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("alerts", "0003_todo_idx")]

    operations = [
        migrations.AlterModelOptions(
            name="alertdelivery",
            options={"ordering": ["-id"], "verbose_name_plural": "alert deliveries"},
        ),
    ]
