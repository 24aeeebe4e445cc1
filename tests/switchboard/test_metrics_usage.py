"""/metrics' switchboard_tokens_total and switchboard_cost_usd_total: from the usage rollups the
OTLP ingest keeps, per endpoint, queue and token type, read once per interval."""

from __future__ import annotations

import pytest

from otlp import prices
from tests.base import Personas
from tests.otlp.test_budgets import chat, claim
from tests.otlp.test_usage import FIXTURES, send
from tests.switchboard.test_metrics_scrape import django_scrape, sample
from todos import gauges


@pytest.mark.django_db
def test_tokens_and_cost_per_endpoint_queue_and_type(personas: Personas) -> None:
    prices.load(prices.parse((FIXTURES / "prices.csv").read_text()), "tests")
    _, trace = claim(personas.endpoint_a.id, queue="ci")
    send(personas.endpoint_a.id, [chat(trace, 500)])  # 100 in, 500 out: $0.00525
    counters = gauges.register_usage()
    assert counters.refresh(force=True)

    samples = django_scrape()

    def tokens(kind: str) -> float | None:
        return sample(
            samples, "switchboard_tokens_total", endpoint="agent-a", queue="ci", type=kind
        )

    assert (tokens("input"), tokens("output"), tokens("unpriced")) == (100, 500, 0)
    cost = sample(samples, "switchboard_cost_usd_total", endpoint="agent-a", queue="ci")
    assert cost == pytest.approx(0.00525)
