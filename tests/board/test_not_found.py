"""The Board's 404: an unknown schedule, source, endpoint, team or alert channel, and an address
that is no page, answer 404 inside the Board (the rail, the section's way back) saying what was
not found; another human's thing answers exactly as an unknown one does."""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client

from alerts import channels
from switchboard import teams
from tests.base import Personas
from tests.factories import SourceFactory
from todos import schedules

pytestmark = pytest.mark.django_db

YOURS = "it does not exist, or it is not yours or one of your teams&#x27;."
MESSAGE = re.compile(r'<div class="error" role="alert">(.*?)</div>', re.S)


def said(response: object) -> str:
    """The 404's message, after checking it is the Board's page: the rail, and a way back."""
    assert getattr(response, "status_code", None) == 404
    page = response.content.decode()  # type: ignore[attr-defined]
    assert '<nav class="rail" aria-label="Board">' in page
    assert "<h1>Not found</h1>" in page
    match = MESSAGE.search(page)
    assert match is not None, page
    return match[1]


@pytest.mark.parametrize(
    ("path", "message", "section"),
    [
        (
            "/schedules/999999",
            'Schedule <span class="mono">#999999</span> was not found: it does not exist, or'
            " it is not on one of your endpoints.",
            "Schedules",
        ),
        (
            "/sources/nope",
            f'Source <span class="mono">nope</span> was not found: {YOURS}',
            "Sources",
        ),
        (
            "/endpoints/nope",
            f'Endpoint <span class="mono">nope</span> was not found: {YOURS}',
            "Endpoints",
        ),
        (
            "/teams/nope",
            'Team <span class="mono">nope</span> was not found: it does not exist, or you are'
            " not one of its members.",
            "Teams",
        ),
        (
            f"/alerts/channels/{uuid.UUID(int=7)}/secret",
            f'Alert channel <span class="mono">{uuid.UUID(int=7)}</span> was not found: {YOURS}',
            "Alerts",
        ),
    ],
)
def test_an_unknown_thing_is_named_on_the_boards_404(
    alice_client: Client, path: str, message: str, section: str
) -> None:
    response = alice_client.get(path)

    assert said(response) == message
    page = response.content.decode()
    # Under its section in the rail, with the way back to its list.
    assert re.search(rf'aria-current="page">(<span[^>]*>[^<]*</span> )?{section}', page)
    assert f"← {section}</a>" in page


@pytest.mark.parametrize("path", ["/bulk/bogus", "/queues/bogus", "/no/such/page"])
def test_an_address_that_is_no_page_says_so_and_names_no_todo(
    alice_client: Client, path: str
) -> None:
    message = said(alice_client.get(path))

    assert message == f'There is no page at <span class="mono">{path}</span>.'
    assert "Todo" not in message


def test_an_outsider_gets_the_same_404_as_for_nothing(
    bob_client: Client, personas: Personas
) -> None:
    source = SourceFactory(owner=personas.alice, slug="alices-hooks")
    schedule = schedules.add(personas.endpoint_a, queue="reports", cron="0 9 * * *", title="R")
    channel, _ = channels.add_channel(personas.alice, email="ops@example.com")
    team = teams.create_team("alices-team", personas.alice)
    theirs_and_none = [
        (f"/endpoints/{personas.endpoint_a.slug}", "/endpoints/agent-z"),
        (f"/sources/{source.slug}", "/sources/bobs-z"),
        (f"/schedules/{schedule.pk}", f"/schedules/{schedule.pk + 1000}"),
        (f"/alerts/channels/{channel.pk}/secret", f"/alerts/channels/{uuid.uuid4()}/secret"),
        (f"/teams/{team.name}", "/teams/team-z"),
    ]
    for theirs, none in theirs_and_none:
        name = theirs.removesuffix("/secret").rsplit("/", 1)[1]
        other = none.removesuffix("/secret").rsplit("/", 1)[1]
        assert said(bob_client.get(theirs)) == said(bob_client.get(none)).replace(other, name)


def test_htmx_gets_the_message_alone(alice_client: Client, htmx_headers: dict[str, str]) -> None:
    response = alice_client.get("/sources/nope", **htmx_headers)  # type: ignore[arg-type]

    assert response.status_code == 404
    body = response.content.decode()
    assert body.startswith('<div class="error" role="alert">Source') and "<nav" not in body


def test_nobody_logged_in_is_offered_the_login(client: Client) -> None:
    response = client.get("/no/such/page")

    assert response.status_code == 404
    page = response.content.decode()
    assert "There is no page at" in page and 'href="/login/"' in page
    assert '<nav class="rail"' not in page
