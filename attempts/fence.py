"""The lease fence: a random token whose SHA-256 sits on the open attempt.

Why it is keyed as it is: docs/decisions/0008-fence-on-attempts-total.md.

The token is returned once, to the claimer; the database holds only its digest, so reading the
table hands out no live capability. Statements compare digests in SQL: fixed-length values, so
no timing difference tells anything about the token, and a mismatch is the same ``conflict``
as "not the holder".
"""

from __future__ import annotations

import base64
import hashlib
import re
import secrets

from switchboard.lib.errors import InvalidInput

TOKEN_BYTES = 16
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{22}")


def mint() -> tuple[str, bytes]:
    """Return a new token (base64url, unpadded) and the digest to store."""
    raw = secrets.token_bytes(TOKEN_BYTES)
    return _encode(raw), hashlib.sha256(raw).digest()


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def digest(token: str | None) -> bytes | None:
    """The digest to compare for a presented token; None when no token was presented.

    A token that does not decode to 16 bytes can never match; it is rejected as invalid input
    rather than compared, so a garbled token reads as the caller's bug.
    """
    if token is None:
        return None
    # Exactly the spelling mint() produces: 22 base64url characters that re-encode to themselves
    # (the decoder would otherwise skip stray characters and ignore the last character's unused
    # bits, so several spellings would name one token).
    if isinstance(token, str) and len(token) == 24 and token.endswith("=="):
        token = token[:-2]  # the same token with its base64 padding put back
    if not isinstance(token, str) or not _TOKEN_RE.fullmatch(token):
        raise InvalidInput("lease_token", "is not a lease token")
    raw = base64.urlsafe_b64decode(token + "==")
    if _encode(raw) != token:
        raise InvalidInput("lease_token", "is not a lease token")
    return hashlib.sha256(raw).digest()
