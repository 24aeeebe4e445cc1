"""A forgotten todo's tombstone: when and by whom its content was erased.

``manage.py forget`` and the Board's Forget (``activity/forget.py``) erase what a finished todo
held (payload, result, title, work order, summaries, notes, questions, spans, the delivery's
body) and keep its id, endpoint, queue, final state, timestamps and counts; these two columns say
that it happened, when, and who did it (an Actor spelling, ``switchboard/lib/actors.py``). Both
NULL on every other todo: adding them rewrites nothing.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("todos", "0018_events_signed_body")]

    operations = [
        migrations.AddField(
            model_name="todo",
            name="forgotten_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="todo",
            name="forgotten_by",
            field=models.TextField(blank=True, null=True),
        ),
    ]
