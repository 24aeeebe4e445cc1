"""A source's delivery budget (``hooks_rate_per_source``) counts only deliveries that pass its
signature (todos/intake/deliveries.py): a stranger posting unsigned or forged bodies to a signed
source spends the budget of its own address, never the one the real sender delivers under.

On a daphne process of its own that believes ``X-Forwarded-For`` from the test (a trusted
proxy), so the stranger and the sender are two client addresses; started after the low limits
are committed (the server reads runtime settings on its first request).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from switchboard import runtime_settings
from tests.base import Personas
from tests.factories import SourceFactory
from tests.live import LiveServer, _start, _stop, _wait_ready
from todos.intake.routing import sign
from todos.models import Event

SECRET = "the-real-senders-secret"
LIMITS = {
    "hooks_rate_per_address": 4,
    "hooks_rate_per_source": 2,
    "hooks_rejected_per_source": 1000,
}
STRANGER = {"X-Forwarded-For": "203.0.113.7"}
SENDER = {"X-Forwarded-For": "198.51.100.9"}

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def server(personas: Personas, daphne_env: dict[str, str], tmp_path: Path) -> Iterator[LiveServer]:
    for key, value in LIMITS.items():
        runtime_settings.put(key, value)
    live = _start(
        {**daphne_env, "SWITCHBOARD_TRUSTED_PROXIES": "127.0.0.1"}, tmp_path / "budget.log"
    )
    try:
        _wait_ready(live)
        yield live
    finally:
        _stop(live)


def _deliver(live: LiveServer, body: bytes, headers: dict[str, str]) -> httpx2.Response:
    return httpx2.post(
        live.url("/hooks/signed"),
        content=body,
        headers={"Content-Type": "application/json", **headers},
        timeout=30,
    )


def test_a_stranger_s_unsigned_posts_cannot_spend_the_real_sender_s_budget(
    server: LiveServer, personas: Personas
) -> None:
    SourceFactory(owner=personas.alice, slug="signed", secret=SECRET)
    forged = {"X-Signature-256": sign("not-the-secret", b"{}")}

    strangers = [_deliver(server, b"{}", STRANGER) for _ in range(3)]
    strangers += [_deliver(server, b"{}", {**STRANGER, **forged}) for _ in range(3)]
    signed = {"X-Signature-256": sign(SECRET, b'{"n": 1}')}
    first = _deliver(server, b'{"n": 1}', {**SENDER, **signed})

    # Six posts over a source budget of 2: each was refused for its signature until the
    # stranger's own address ran out (4 a minute), and the real sender still delivers.
    assert [a.status_code for a in strangers] == [401, 401, 401, 401, 429, 429]
    assert strangers[4].json()["error"] == "rate_limited"
    assert "retry-after" in strangers[4].headers
    assert first.status_code == 202, first.text


def test_the_source_s_budget_still_bounds_signed_deliveries(
    server: LiveServer, personas: Personas
) -> None:
    SourceFactory(owner=personas.alice, slug="signed", secret=SECRET)
    answers = []
    for n in range(3):
        body = f'{{"n": {n}}}'.encode()
        answers.append(_deliver(server, body, {**SENDER, "X-Signature-256": sign(SECRET, body)}))

    assert [a.status_code for a in answers] == [202, 202, 429]
    assert answers[2].json()["error"] == "rate_limited"
    assert "this source" in answers[2].json()["message"]
    assert int(answers[2].headers["retry-after"]) >= 1
    # Over the budget, nothing is stored.
    assert Event.objects.count() == 2
