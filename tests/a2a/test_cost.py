"""A2A and cost: metadata's max_cost_usd caps the new todo (bad amounts refused naming the
key), and the task's metadata carries its usage and cap."""

from __future__ import annotations

from decimal import Decimal

import pytest
from a2a.types import GetTaskRequest
from a2a.utils.errors import A2AError
from google.protobuf import json_format

from tests.a2a.test_a2a import a2a, a2a_endpoint, message, send
from tests.base import Personas
from tests.live import LiveServer, run
from todos.models import Todo

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_max_cost_usd_from_metadata_and_usage_in_the_task(
    live: LiveServer, personas: Personas
) -> None:
    _, requester, _agent = a2a_endpoint(personas.alice, "front")
    got: dict[str, object] = {}

    async def create() -> None:
        async with a2a(live, "front", requester, "1.0") as client:
            msg = message("Summarise the incident", queue="triage")
            msg.metadata.update({"max_cost_usd": 0.5})
            task = await send(client, msg)
            got["id"] = task.id

    run(create())
    todo = Todo.objects.get(id=got["id"])
    assert todo.max_cost_usd == Decimal("0.5")
    # What the ingest keeps on the row (tested in tests/otlp/test_usage.py), as A2A shows it.
    Todo.objects.filter(id=todo.id).update(
        input_tokens=1000, output_tokens=200, cost_usd=Decimal("0.0123")
    )

    async def read() -> None:
        async with a2a(live, "front", requester, "1.0") as client:
            task = await client.get_task(GetTaskRequest(id=todo.id))
            metadata = json_format.MessageToDict(task.metadata)
            usage = metadata["switchboard.usage"]
            assert usage["tokens"]["input"] == 1000 and usage["tokens"]["output"] == 200
            assert usage["cost_usd"] == pytest.approx(0.0123)
            assert metadata["switchboard.max_cost_usd"] == 0.5

    run(read())


@pytest.mark.parametrize("value", [-1])
def test_a_bad_max_cost_usd_is_refused_naming_the_key(
    live: LiveServer, personas: Personas, value: object
) -> None:
    _, requester, _agent = a2a_endpoint(personas.alice, "front")

    async def scenario() -> None:
        async with a2a(live, "front", requester, "1.0") as client:
            msg = message("x")
            msg.metadata.update({"max_cost_usd": value})
            with pytest.raises(A2AError, match="max_cost_usd"):
                await send(client, msg)

    run(scenario())
    assert not Todo.objects.exists()
