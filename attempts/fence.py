"""The lease fence (seed 000): a random token whose SHA-256 sits on the open attempt.

The token is returned once, to the claimer; the database holds only its digest, so reading the
table hands out no live capability. Statements compare digests in SQL: fixed-length values, so
no timing difference tells anything about the token, and a mismatch is the same ``conflict``
as "not the holder".
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets

from todos.errors import InvalidInput

TOKEN_BYTES = 16


def mint() -> tuple[str, bytes]:
    """Return a new token (base64url, unpadded) and the digest to store."""
    raw = secrets.token_bytes(TOKEN_BYTES)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode(), hashlib.sha256(raw).digest()


def digest(token: str | None) -> bytes | None:
    """The digest to compare for a presented token; None when no token was presented.

    A token that does not decode to 16 bytes can never match; it is rejected as invalid input
    rather than compared, so a garbled token reads as the caller's bug.
    """
    if token is None:
        return None
    if not isinstance(token, str) or len(token) > 64:
        raise InvalidInput("lease_token", "is not a lease token")
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError):
        raise InvalidInput("lease_token", "is not a lease token") from None
    if len(raw) != TOKEN_BYTES:
        raise InvalidInput("lease_token", "is not a lease token")
    return hashlib.sha256(raw).digest()
