"""Endpoint keys: minting and lookup. A key's plaintext exists only in what minting returns."""

from __future__ import annotations

import base64
import hashlib
import secrets

from django.db import connection

from switchboard.models import Endpoint, EndpointKey

KEY_PREFIX = "sbk_"
# "sbk_" and the first 8 characters of the random part: enough to tell keys apart in a list,
# far too little to guess the rest (24 bytes of entropy remain unshown).
DISPLAY_PREFIX_CHARS = len(KEY_PREFIX) + 8


def hash_key(plaintext: str) -> bytes:
    return hashlib.sha256(plaintext.encode()).digest()


def mint_key(endpoint: Endpoint) -> tuple[EndpointKey, str]:
    """Create a key for ``endpoint``; return the row and the plaintext, which is never stored."""
    plaintext = KEY_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    key = EndpointKey.objects.create(
        endpoint=endpoint,
        prefix=plaintext[:DISPLAY_PREFIX_CHARS],
        key_hash=hash_key(plaintext),
    )
    return key, plaintext


def key_for_plaintext(plaintext: str) -> EndpointKey | None:
    """Return the live key (and its live endpoint) for ``plaintext``, or None.

    Unknown keys, revoked keys and keys of revoked endpoints all give None: callers answer all
    three the same way, so a response never tells which.
    """
    if not plaintext.startswith(KEY_PREFIX) or len(plaintext) > 128:
        return None
    return (
        EndpointKey.objects.select_related("endpoint", "endpoint__owner")
        .filter(
            key_hash=hash_key(plaintext),
            revoked_at__isnull=True,
            endpoint__revoked_at__isnull=True,
        )
        .first()
    )


def touch_key(key: EndpointKey) -> None:
    """Record a use of ``key``, writing at most once a minute per key (the row is hot otherwise)."""
    with connection.cursor() as cur:
        cur.execute(
            "UPDATE endpoint_keys SET last_used_at = now() WHERE id = %s"
            " AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')",
            [key.pk],
        )
