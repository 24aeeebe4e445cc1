"""Runtime settings: typed defaults in code, validated overrides in the
``settings`` table, a short per-process cache that ``put()`` clears."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from django.db import connection

from switchboard import runtime_settings
from switchboard.models import Setting
from switchboard.runtime_settings import FIELDS, InvalidSetting, RuntimeSettings

pytestmark = pytest.mark.django_db

DEFAULTS = {f.name: f.default for f in dataclasses.fields(RuntimeSettings)}


def _store_raw(key: str, value: Any) -> None:
    """Write a row in SQL, unvalidated and unsignalled, as a hand edit or an older version would."""
    with connection.cursor() as cur:
        cur.execute(
            "INSERT INTO settings (key, value, updated_at) VALUES (%s, %s::jsonb, now())",
            [key, json.dumps(value)],
        )


def test_defaults_apply_when_the_table_is_empty() -> None:
    assert not Setting.objects.exists()

    current = runtime_settings.current()

    assert dataclasses.asdict(current) == DEFAULTS
    assert current.attempts_max_per_todo == 50
    assert current.lease_ttl_default_seconds == 300


def test_every_default_lies_within_its_own_bounds() -> None:
    for name, spec in FIELDS.items():
        assert runtime_settings.validate(name, spec.default) == spec.default


def test_an_override_is_read_back_typed() -> None:
    runtime_settings.put("retry_base_seconds", 45)

    current = runtime_settings.current()

    assert current.retry_base_seconds == 45
    assert type(current.retry_base_seconds) is int
    assert Setting.objects.get(key="retry_base_seconds").value == 45
    # The others keep their defaults.
    assert current.retry_max_seconds == DEFAULTS["retry_max_seconds"]


def test_put_replaces_an_earlier_override() -> None:
    runtime_settings.put("retention_days", 10)
    runtime_settings.put("retention_days", 12)

    assert Setting.objects.filter(key="retention_days").count() == 1
    assert runtime_settings.current().retention_days == 12


def test_validate_rejects_an_unknown_key() -> None:
    with pytest.raises(InvalidSetting, match="unknown setting 'retry_bsae_seconds'"):
        runtime_settings.validate("retry_bsae_seconds", 30)


@pytest.mark.parametrize("value", ["30", 30.0, 30.5, None, [30], {"value": 30}])
def test_validate_rejects_a_value_that_is_not_an_integer(value: Any) -> None:
    with pytest.raises(InvalidSetting, match="retry_base_seconds must be an integer"):
        runtime_settings.validate("retry_base_seconds", value)


@pytest.mark.parametrize("value", [True, False])
def test_validate_rejects_a_boolean_although_python_counts_it_an_int(value: bool) -> None:
    with pytest.raises(InvalidSetting, match="must be an integer"):
        runtime_settings.validate("attempts_max_per_todo", value)


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_validate_rejects_values_outside_the_bounds_and_accepts_the_bounds(name: str) -> None:
    low, high = FIELDS[name].metadata["min"], FIELDS[name].metadata["max"]

    assert runtime_settings.validate(name, low) == low
    assert runtime_settings.validate(name, high) == high
    with pytest.raises(InvalidSetting, match=f"{name} must be between {low} and {high}"):
        runtime_settings.validate(name, low - 1)
    with pytest.raises(InvalidSetting, match=f"{name} must be between {low} and {high}"):
        runtime_settings.validate(name, high + 1)


def test_put_refuses_an_invalid_value_and_stores_nothing() -> None:
    with pytest.raises(InvalidSetting):
        runtime_settings.put("retry_base_seconds", 0)
    with pytest.raises(InvalidSetting):
        runtime_settings.put("no_such_setting", 5)

    assert not Setting.objects.exists()


@pytest.mark.parametrize("value", ["soon", True, 0, 10**9, 30.5, None, {"seconds": 30}], ids=repr)
def test_a_stored_bad_value_falls_back_to_the_default(value: Any) -> None:
    _store_raw("retry_base_seconds", value)
    _store_raw("retry_max_seconds", 120)  # a good row beside it still applies

    current = runtime_settings.load()

    assert current.retry_base_seconds == DEFAULTS["retry_base_seconds"]
    assert current.retry_max_seconds == 120


def test_a_stored_row_for_an_unknown_key_is_ignored() -> None:
    _store_raw("setting_from_an_older_version", 5)

    assert dataclasses.asdict(runtime_settings.load()) == DEFAULTS


def test_current_is_cached_between_reads() -> None:
    assert runtime_settings.current().retention_days == DEFAULTS["retention_days"]
    _store_raw("retention_days", 7)  # no put(), no signal: the cache does not know

    assert runtime_settings.current().retention_days == DEFAULTS["retention_days"]
    runtime_settings.clear_cache()
    assert runtime_settings.current().retention_days == 7


def test_put_clears_the_cache() -> None:
    assert runtime_settings.current().retention_days == DEFAULTS["retention_days"]

    runtime_settings.put("retention_days", 7)

    assert runtime_settings.current().retention_days == 7


def test_an_admin_style_save_clears_the_cache() -> None:
    assert runtime_settings.current().waterfall_max_spans == DEFAULTS["waterfall_max_spans"]

    Setting.objects.create(key="waterfall_max_spans", value=500)
    assert runtime_settings.current().waterfall_max_spans == 500

    Setting.objects.get(key="waterfall_max_spans").delete()
    assert runtime_settings.current().waterfall_max_spans == DEFAULTS["waterfall_max_spans"]
