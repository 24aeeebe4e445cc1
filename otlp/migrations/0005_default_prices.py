"""Load the shipped default prices (otlp/prices/default.csv, dated, naming its sources) into an
empty price table; reversed, remove exactly the rows that file holds (by model, provider and
effective_from) as long as nobody has edited them since."""

from pathlib import Path
from typing import Any

from django.db import migrations

FILE = Path(__file__).resolve().parent.parent / "prices" / "default.csv"
SOURCE = "otlp/prices/default.csv"


def forward(apps: Any, schema_editor: Any) -> None:
    from otlp.prices import PRICE_FIELDS, parse

    Price = apps.get_model("otlp", "Price")
    if Price.objects.exists():
        return
    Price.objects.bulk_create(
        Price(
            model=r.model,
            provider=r.provider,
            effective_from=r.effective_from,
            source=SOURCE,
            **{f: getattr(r, f) for f in PRICE_FIELDS},
        )
        for r in parse(FILE.read_text())
    )


def reverse(apps: Any, schema_editor: Any) -> None:
    apps.get_model("otlp", "Price").objects.filter(source=SOURCE).delete()


class Migration(migrations.Migration):
    dependencies = [("otlp", "0004_usage_and_prices")]

    operations = [migrations.RunPython(forward, reverse)]
