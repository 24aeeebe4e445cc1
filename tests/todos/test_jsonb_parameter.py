"""The lifecycle's jsonb parameters refuse what jsonlimits refuses, with its reasons, though
they skip its walk when the encoded text shows it could find nothing (todos/lifecycle/core.py)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from switchboard.lib import jsonlimits
from switchboard.lib.errors import InvalidInput
from todos.lifecycle.core import jsonb

NUL = "\x00"
SURROGATE = "\ud800"


def nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"s": NUL}, "NUL"),
        ({NUL: 1}, "NUL"),
        ({"s": SURROGATE}, "surrogate"),
        ([{"k": [SURROGATE]}], "surrogate"),
        (nested(jsonlimits.MAX_DEPTH + 1), "nested"),
        # Past the interpreter's recursion limit json.dumps itself gives up: the reason stays.
        (nested(10_000), "nested"),
        ({"x": math.nan}, "not finite"),
        ([math.inf], "not finite"),
    ],
)
def test_a_value_jsonb_cannot_hold_is_refused_with_the_checkers_reason(value: Any, reason: str):
    with pytest.raises(InvalidInput) as raised:
        jsonb("result", value)
    assert reason in str(raised.value)
    assert raised.value.field == "result"


@pytest.mark.parametrize(
    "value",
    [
        nested(jsonlimits.MAX_DEPTH),
        # Brackets and escapes inside strings only send the value through the full walk.
        {"s": "[" * 100 + "{" * 100, "t": "\\u0000", "é": "ü"},
        {"ok": True, "checks": ["lint", "unit"], "n": 1.5, "z": None},
    ],
)
def test_a_value_jsonb_can_hold_is_sent_as_its_own_json(value: Any):
    wrapped = jsonb("result", value)
    assert wrapped is not None and wrapped.obj is value
    assert json.loads(wrapped.dumps(value)) == value


def test_a_value_json_cannot_encode_is_not_json():
    with pytest.raises(InvalidInput, match="is not JSON"):
        jsonb("result", {"s": {1, 2}})
