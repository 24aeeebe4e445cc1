"""events.body_size, body_sha256, body_prefix: what a rejected delivery keeps of its body.

A delivery whose signature fails is stored without its payload (todos/intake/deliveries.py):
these three say which body it was. Nullable columns without a default: adding them rewrites
nothing; removing them (the reverse) loses only that evidence.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("todos", "0007_push_rings")]

    operations = [
        migrations.AddField(
            model_name="event",
            name="body_size",
            field=models.IntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="event",
            name="body_sha256",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="event",
            name="body_prefix",
            field=models.TextField(blank=True, null=True),
        ),
    ]
