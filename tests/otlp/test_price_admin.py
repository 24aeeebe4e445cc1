"""The price admin holds a row to the rules ``manage.py prices load`` holds a file's rows to
(``otlp.prices``): one limit for the model, the prices and the provider, wherever a row is
written."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from otlp import prices
from otlp.models import Price

pytestmark = pytest.mark.django_db


def _row(**fields: Any) -> dict[str, Any]:
    blank = {f: "" for f in ("provider", "input", "output", "cache_read", "cache_write")}
    return blank | {"model": "m", "effective_from": "2026-01-01", "reasoning": ""} | fields


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("model", "x" * (prices.MODEL_MAX_CHARS + 1), "1 to 128 characters"),
        ("model", "gpt-[45]", "a name, or a pattern with * only"),
        ("input", "1000001", "above 1000000 USD per million tokens"),
    ],
)
def test_a_row_the_price_file_would_refuse_is_refused_on_its_field(
    admin_client: Client, field: str, value: str, said: str
) -> None:
    with pytest.raises(prices.PriceError, match=re.escape(said)):
        prices.parse(f"{','.join(prices.HEADER)}\n" + _file_line(**{field: value}))

    response = admin_client.post(reverse("admin:otlp_price_add"), _row(**{field: value}))

    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {field: [said]}
    assert not Price.objects.filter(effective_from="2026-01-01").exists()


def test_a_row_within_the_rules_is_saved_as_a_file_would_save_it(admin_client: Client) -> None:
    model = "x" * prices.MODEL_MAX_CHARS
    response = admin_client.post(
        reverse("admin:otlp_price_add"),
        _row(model=f" {model} ", provider=" OpenAI ", input="1000000"),
    )

    assert response.status_code == 302
    row = Price.objects.get(effective_from="2026-01-01")
    assert (row.model, row.provider, row.input) == (model, "openai", 1_000_000)


def _file_line(**fields: str) -> str:
    row = {"model": "m", "provider": "", "effective_from": "2026-01-01"} | fields
    return ",".join(row.get(h, "") for h in prices.HEADER) + "\n"
