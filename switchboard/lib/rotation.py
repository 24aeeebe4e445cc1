"""Rotating a secret from a page, where the new one is shown once: the question carries a
fingerprint of the secret it was asked about (a short keyed digest, safe to put in the page),
and the answer rotates only while that secret is still the current one, so a reloaded or
concurrent answer rotates nothing. The writers (push secrets, sources, alert channels) each
name their ``purpose``, which keys the digest."""

from __future__ import annotations

from django.utils.crypto import constant_time_compare, salted_hmac


def fingerprint(secret: str, purpose: str) -> str:
    """A short keyed digest of ``secret`` for ``purpose``."""
    return salted_hmac(purpose, secret).hexdigest()[:24]


def still_current(secret: str, purpose: str, given: str) -> bool:
    """Whether ``given`` is the fingerprint of ``secret`` (compared in constant time)."""
    return constant_time_compare(fingerprint(secret, purpose), given)
