"""What an attempt may record: summary and claimant are cut, never rejected; artifact is validated.

A reporter's verdict must never be lost because its prose ran long, while a malformed handle is a
bug the caller should see (docs/guides/lifecycle.md, the attempt's fields). Summaries are data
replayed to later claimers; Switchboard never interprets them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from switchboard.lib.errors import InvalidInput
from switchboard.lib.text import cut_utf8, has_control_or_space, strip_control, strip_nul

SUMMARY_MAX_BYTES = 2048
CLAIMANT_MAX_BYTES = 128
ARTIFACT_MAX_BYTES = 512


def summary(text: str | None) -> tuple[str | None, bool]:
    """Return the summary to store and whether it was truncated."""
    if text is None:
        return None, False
    if not isinstance(text, str):
        raise InvalidInput("summary", "must be a string")
    return cut_utf8(strip_nul(text), SUMMARY_MAX_BYTES)


def summary_from_result(result: Any) -> tuple[str | None, bool]:
    """The compact JSON of ``result``, cut like any summary (the summary-from-result switch)."""
    if result is None:
        return None, False
    return summary(json.dumps(result, separators=(",", ":"), ensure_ascii=False))


def claimant(text: str | None) -> str | None:
    """Control characters stripped, cut to 128 bytes; empty becomes None."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise InvalidInput("claimant", "must be a string")
    # A printable string has no control character to strip (the usual case, checked in C).
    kept = text if text.isprintable() else strip_control(text)
    cleaned, _ = cut_utf8(kept.strip(), CLAIMANT_MAX_BYTES)
    return cleaned or None


def artifact(uri: str | None, allowed_schemes: Iterable[str]) -> str | None:
    """Return ``uri`` if it is an acceptable artifact handle; raise ``InvalidInput`` otherwise.

    Acceptable: an absolute URI of at most 512 bytes, no whitespace or control characters, no
    user-info part, and a scheme in the allow-list (SWITCHBOARD_ARTIFACT_SCHEMES).
    """
    if uri is None:
        return None
    if not isinstance(uri, str):
        raise InvalidInput("artifact", "must be a string")
    if len(uri.encode("utf-8")) > ARTIFACT_MAX_BYTES:
        raise InvalidInput("artifact", f"longer than {ARTIFACT_MAX_BYTES} bytes")
    if has_control_or_space(uri):
        raise InvalidInput("artifact", "contains whitespace or control characters")
    try:
        parts = urlsplit(uri)
    except ValueError as exc:
        raise InvalidInput("artifact", f"not a URI ({exc})") from None
    schemes = {s.lower() for s in allowed_schemes}
    if not parts.scheme:
        raise InvalidInput("artifact", "must be an absolute URI with a scheme")
    if parts.scheme.lower() not in schemes:
        raise InvalidInput(
            "artifact",
            f"scheme {parts.scheme!r} is not allowed (allowed: {', '.join(sorted(schemes))})",
        )
    if "@" in parts.netloc:
        raise InvalidInput("artifact", "must not carry user information")
    if not (parts.netloc or parts.path):
        raise InvalidInput("artifact", "has nothing after the scheme")
    return uri
