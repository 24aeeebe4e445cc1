"""Client ID Metadata Documents through Switchboard's fetcher (``switchboard.oauth``
``GuardedMetadataFetcher``): a document is kept as long as its ``Cache-Control`` says, within
django-oauth-toolkit's bounds (5 minutes to a day), and a private address is refused naming the
setting that allows it for OAuth clients, not the push rings'. The documents are served over
HTTPS on loopback by ``metadata_host`` and fetched in this process by the consent page."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.cimd import CIMDError
from oauth2_provider.models import Application

from switchboard.oauth import GuardedMetadataFetcher
from tests.factories import HumanFactory
from tests.oauth import flow
from tests.oauth.conftest import MetadataHost

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("cache_control", "kept"),
    [
        pytest.param("max-age=7200", 7200, id="within-bounds"),
        pytest.param("public, max-age=60", 300, id="under-the-floor"),
        pytest.param("max-age=31536000", 86_400, id="over-the-ceiling"),
        pytest.param("no-store", 300, id="no-store"),
    ],
)
def test_a_documents_cache_control_says_how_long_it_is_kept(
    client: Client,
    metadata_host: MetadataHost,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    cache_control: str,
    kept: int,
) -> None:
    settings.SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE = True  # metadata_host is on loopback
    monkeypatch.setenv("SSL_CERT_FILE", str(metadata_host.ca))  # ... with the test CA's cert
    client.force_login(HumanFactory())
    path = f"/clients/kept-{request.node.callspec.id}.json"
    client_id = metadata_host.serve_json(
        path,
        {
            "client_id": metadata_host.url(path),
            "client_name": "Cached Client",
            "redirect_uris": [flow.REDIRECT],
            "token_endpoint_auth_method": "none",
        },
        cache_control=cache_control,
    )

    before = timezone.now()
    page = client.get(flow.authorization(client_id, None).url())
    after = timezone.now()

    assert page.status_code == 200, page.content
    assert "Cached Client" in page.content.decode()
    expires = Application.objects.get(client_id=client_id).cimd_expires_at
    assert before + timedelta(seconds=kept) <= expires <= after + timedelta(seconds=kept)


def test_a_document_on_a_private_address_is_refused_naming_the_oauth_setting(
    settings: Any,
) -> None:
    settings.SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE = False

    with pytest.raises(CIMDError) as refused:
        GuardedMetadataFetcher().fetch("https://127.0.0.1:9/clients/app.json")

    message = str(refused.value)
    assert "private, loopback or link-local" in message
    assert "SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE=true" in message
    assert "SWITCHBOARD_PUSH_ALLOW_PRIVATE" not in message
    assert "=true on the server" in message  # only the server fetches a client's document
