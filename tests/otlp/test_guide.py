"""The guide's exporter variables are the ones the vend wizard shows
(switchboard/endpoint_views.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import RequestFactory

from switchboard.endpoint_views import client_config
from tests.base import Personas

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "agent-activity.md"


@pytest.mark.django_db
def test_the_guide_shows_the_wizards_otlp_variables(personas: Personas) -> None:
    request = RequestFactory().get("/", secure=True)
    key = "sbk_" + "k" * 43
    config = client_config(request, personas.endpoint_a, key)  # type: ignore[arg-type]
    base = request.build_absolute_uri("/")[:-1]

    # The guide shows them for make run's demo endpoint, the address from $SWITCHBOARD_URL and the
    # key from $SWITCHBOARD_KEY.
    lines = [
        line.replace(base, "$SWITCHBOARD_URL").replace(personas.endpoint_a.slug, "demo-agent")
        for line in config["otlp_env"].splitlines()
    ]
    assert key not in config["otlp_env"]

    guide = GUIDE.read_text()
    assert lines and all(line in guide for line in lines), lines
