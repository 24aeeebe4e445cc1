"""The guide's exporter variables are the ones the vend wizard shows (switchboard/board.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import RequestFactory

from switchboard.board import client_config
from tests.base import Personas

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "agent-activity.md"


@pytest.mark.django_db
def test_the_guide_shows_the_wizards_otlp_variables(personas: Personas) -> None:
    request = RequestFactory().get("/", secure=True)
    key = "sbk_" + "k" * 43
    config = client_config(request, personas.endpoint_a, key)  # type: ignore[arg-type]
    base = request.build_absolute_uri("/")[:-1]

    lines = [
        line.replace(base, "https://switchboard.example")
        .replace(personas.endpoint_a.slug, "<slug>")
        .replace(key, "<key>")
        for line in config["otlp_env"].splitlines()
    ]

    guide = GUIDE.read_text()
    assert lines and all(line in guide for line in lines), lines
