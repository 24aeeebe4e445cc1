"""The live OAuth tests' server and helpers.

``oauth_live`` is a daphne process of its own (``tests/live.py``) that trusts this run's test CA
(``SSL_CERT_FILE``) and may fetch client metadata documents from loopback
(``SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE``): ``metadata_host`` serves them over HTTPS from a
thread of the test process, with a certificate for 127.0.0.1 signed by that CA. ``board_login``
signs a human in on the Board's real login form, and ``Consent`` is the human at the consent
page: the official MCP SDK's ``redirect_handler`` and ``callback_handler``, driven over HTTP.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import re
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.live import LiveServer, start_servers, stop_servers
from tests.oauth.flow import REDIRECT, form_fields

PASSWORD = "correct horse battery staple"


def _tls_files(directory: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) for 127.0.0.1, made now."""
    now = dt.datetime.now(dt.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "switchboard test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.OID_SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = (directory / n for n in ("ca.pem", "cert.pem", "key.pem"))
    ca_path.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_path, cert_path, key_path


@dataclass
class MetadataHost:
    """An HTTPS server on loopback whose documents the tests set by path."""

    port: int
    ca: Path
    documents: dict[str, tuple[int, str, bytes]] = field(default_factory=dict)
    # Each path's Cache-Control, when not the default max-age=600.
    cache_control: dict[str, str] = field(default_factory=dict)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def serve_json(
        self,
        path: str,
        document: Any,
        content_type: str = "application/json",
        cache_control: str | None = None,
    ) -> str:
        self.documents[path] = (200, content_type, json.dumps(document).encode())
        if cache_control is not None:
            self.cache_control[path] = cache_control
        return self.url(path)

    def serve_raw(self, path: str, status: int, content_type: str, body: bytes) -> str:
        self.documents[path] = (status, content_type, body)
        return self.url(path)


@pytest.fixture(scope="session")
def metadata_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetadataHost]:
    ca, cert, key = _tls_files(tmp_path_factory.mktemp("tls"))
    documents: dict[str, tuple[int, str, bytes]] = {}
    cache_control: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, kind, body = documents.get(self.path, (404, "text/plain", b"no"))
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", cache_control.get(self.path, "max-age=600"))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield MetadataHost(server.server_address[1], ca, documents, cache_control)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def oauth_live(
    daphne_env: dict[str, str],
    metadata_host: MetadataHost,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[LiveServer]:
    [server] = start_servers(
        daphne_env,
        tmp_path_factory.mktemp("oauth-live"),
        1,
        SWITCHBOARD_OAUTH_CIMD_ALLOW_PRIVATE="1",
        SSL_CERT_FILE=str(metadata_host.ca),
    )
    try:
        yield server
    finally:
        stop_servers([server])


def board_login(server: LiveServer, username: str, password: str = PASSWORD) -> httpx2.Client:
    """A browser-like session signed in on the Board's login form (CSRF, django-axes)."""
    session = httpx2.Client(base_url=server.base, timeout=30)
    page = session.get("/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token is not None, page.text[:500]
    answer = session.post(
        "/login/",
        data={"csrfmiddlewaretoken": token.group(1), "username": username, "password": password},
    )
    assert answer.status_code == 302, answer.text[:500]
    return session


@dataclass
class Consent:
    """The human at the consent page, as the SDK's redirect and callback handlers."""

    session: httpx2.Client
    endpoint: str
    scopes: tuple[str, ...]
    allow: bool = True
    seen: list[str] = field(default_factory=list)
    pages: list[str] = field(default_factory=list)
    answer: dict[str, list[str]] = field(default_factory=dict)

    async def redirect(self, url: str) -> None:
        self.seen.append(url)
        page = self.session.get(url)
        assert page.status_code == 200, page.text[:1000]
        self.pages.append(page.text)
        data: dict[str, Any] = {**form_fields(page.text), "endpoint": self.endpoint}
        data["scopes"] = list(self.scopes)
        data["allow" if self.allow else "deny"] = "true"
        answer = self.session.post(url, data=data)
        assert answer.status_code == 302, answer.text[:1000]
        location = answer.headers["location"]
        assert location.startswith(REDIRECT + "?"), location
        self.answer = parse_qs(urlsplit(location).query)

    async def callback(self) -> AuthorizationCodeResult:
        return AuthorizationCodeResult(
            code=self.answer["code"][0],
            state=self.answer.get("state", [None])[0],
            iss=self.answer.get("iss", [None])[0],
        )


class MemoryStorage:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def provider(
    url: str, consent: Consent, storage: MemoryStorage, client_metadata_url: str | None = None
) -> OAuthClientProvider:
    """The official SDK's OAuth client for ``url``, by DCR, or by a metadata document."""
    metadata = OAuthClientMetadata(
        client_name="SDK test client",
        redirect_uris=[REDIRECT],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=" ".join(consent.scopes),
    )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=consent.redirect,
        callback_handler=consent.callback,
        client_metadata_url=client_metadata_url,
    )
