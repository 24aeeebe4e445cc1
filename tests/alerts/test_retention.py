"""Todo retention and alerts: an alert names its todo without a foreign key, so retention
(todos/sql/retention_todos.sql) unlinks the alerts of the todos it deletes, in the same
statement; the alert itself stays for its own keep (alerts/sql/trim_alerts.sql)."""

from __future__ import annotations

import pytest

from alerts import sweep
from alerts.models import Alert
from switchboard.lib.sql import fetch_all
from tests.alerts.conftest import Receiver
from tests.alerts.helpers import dead_letter, webhook
from tests.base import Personas
from todos import retention
from todos.models import Todo

pytestmark = pytest.mark.django_db(transaction=True)


def test_retention_unlinks_the_alerts_of_the_todos_it_deletes_and_keeps_them(
    personas: Personas, receiver: Receiver
) -> None:
    channel = webhook(personas, receiver)
    gone = dead_letter(personas.endpoint_a.id)
    kept = dead_letter(personas.endpoint_a.id)
    sweep.evaluate_all(sweep.AlertReport())
    assert set(Alert.objects.values_list("todo_id", flat=True)) == {gone, kept}
    fetch_all(
        "UPDATE todos SET finished_at = now() - interval '400 days' WHERE id = %(id)s",
        {"id": gone},
    )

    assert retention.run().todos == 1

    assert not Todo.objects.filter(id=gone).exists()
    alerts = {a.subject.split("@")[0]: a for a in Alert.objects.filter(channel=channel)}
    assert (alerts[gone].todo_id, alerts[kept].todo_id) == (None, kept)
    assert gone in alerts[gone].summary and alerts[gone].state == "event"
