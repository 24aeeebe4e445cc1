"""Slugs equal to the Board's own path words are refused, for endpoints and sources."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import URLPattern

from switchboard import credentials, urls
from switchboard.models import DRAIN_VERBS, Endpoint
from tests.base import Personas
from todos.intake import sources
from todos.models import Source


def _path_words(prefix: str) -> set[str]:
    """The fixed words of every Board route under ``prefix`` (its parameters left out)."""
    words: set[str] = set()
    for pattern in urls.urlpatterns:
        if not isinstance(pattern, URLPattern):
            continue
        route = str(pattern.pattern)
        if route.startswith(prefix):
            parts = route.removeprefix(prefix).split("/")
            words.update(part for part in parts if part and "<" not in part)
    return words


@pytest.mark.parametrize("prefix", ["endpoints/", "sources/"])
def test_every_fixed_path_word_under_endpoints_and_sources_is_reserved(prefix: str) -> None:
    words = _path_words(prefix)

    assert "new" in words  # the walk reads the real URLconf
    assert words <= credentials.RESERVED_SLUGS


@pytest.mark.parametrize("slug", ["new", "keys", "rotate", "rules", "events", "disable"])
def test_create_endpoint_refuses_a_path_word_as_slug(personas: Personas, slug: str) -> None:
    with pytest.raises(ValidationError) as refused:
        credentials.create_endpoint(personas.alice, name="X", slug=slug, verbs=list(DRAIN_VERBS))

    assert "reserved on the Board" in " ".join(refused.value.message_dict["slug"])
    assert not Endpoint.objects.filter(slug=slug).exists()


@pytest.mark.parametrize("slug", ["new", "keys", "rotate", "rules", "events", "disable"])
def test_create_source_refuses_a_path_word_as_slug(personas: Personas, slug: str) -> None:
    with pytest.raises(ValidationError) as refused:
        sources.create_source(personas.alice, slug)

    assert "reserved on the Board" in " ".join(refused.value.message_dict["slug"])
    assert not Source.objects.filter(slug=slug).exists()
