"""Legacy-era session ids that any server process can check, with nothing stored.

The 2025-11-25 era opens a session with ``initialize`` and expects ``Mcp-Session-Id`` back on
every later request, while Switchboard runs several web processes behind one URL. A session id
here is a random value signed (HMAC, Django's ``Signer`` with the project's SECRET_KEY and its
fallbacks) together with the endpoint it was minted for: every process can verify it, a session
of one endpoint is refused on another, and no table or sticky routing is needed. Everything a
session could hold is per request anyway: the MCP server runs in the SDK's stateless mode, and
the bearer key is checked on every request, so a session id confers nothing by itself. Its use
is to label a legacy client's attempts (``todo_attempts.claimer_session``).

There is no server-side end to a session: DELETE is answered 405, which the spec allows ("the
server MAY respond 405"), and a client that wants a fresh session initializes again.
"""

from __future__ import annotations

import secrets
from uuid import UUID

from django.core import signing

PREFIX = "sbs_"
RANDOM_BYTES = 16
MAX_LENGTH = 128


def _signer(endpoint_id: UUID) -> signing.Signer:
    # The endpoint is part of the salt, so the same id verifies for one endpoint only.
    return signing.Signer(salt=f"switchboard.mcp.session:{endpoint_id}")


def mint(endpoint_id: UUID) -> str:
    """A new session id (visible ASCII only, as the transport spec requires)."""
    return _signer(endpoint_id).sign(PREFIX + secrets.token_urlsafe(RANDOM_BYTES))


def is_valid(session_id: str, endpoint_id: UUID) -> bool:
    """Whether ``session_id`` was minted by this deployment for ``endpoint_id``."""
    if not session_id.startswith(PREFIX) or len(session_id) > MAX_LENGTH:
        return False
    try:
        _signer(endpoint_id).unsign(session_id)
    except signing.BadSignature:
        return False
    return True
