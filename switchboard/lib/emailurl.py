"""``EMAIL_URL``: Django's mail settings from one URL, as ``DATABASE_URL`` is the database's.

- ``console://`` (the default): messages are written to the process's standard output;
- ``smtp://user:password@host:25``: plain SMTP; ``smtp+tls://…:587``: STARTTLS;
  ``smtps://…:465`` (or ``smtp+ssl://``): TLS from the start; user and password
  percent-encoded;
- ``file:///var/mail/switchboard``: one file per message in that directory;
- ``locmem://``: kept in memory (tests); ``dummy://``: dropped.

A query ``?from=alerts@example.com`` sets the sender (``DEFAULT_FROM_EMAIL``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

_BACKENDS = {
    "console": "django.core.mail.backends.console.EmailBackend",
    "locmem": "django.core.mail.backends.locmem.EmailBackend",
    "dummy": "django.core.mail.backends.dummy.EmailBackend",
    "file": "django.core.mail.backends.filebased.EmailBackend",
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
    "smtp+tls": "django.core.mail.backends.smtp.EmailBackend",
    "smtps": "django.core.mail.backends.smtp.EmailBackend",
    "smtp+ssl": "django.core.mail.backends.smtp.EmailBackend",
}


def parse(url: str) -> dict[str, Any]:
    """The Django settings ``url`` stands for; ``ValueError`` for a scheme not listed above."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _BACKENDS:
        raise ValueError(f"EMAIL_URL: unknown scheme {parts.scheme!r} (console, smtp, smtp+tls, …)")
    out: dict[str, Any] = {"EMAIL_BACKEND": _BACKENDS[scheme]}
    if scheme == "file":
        out["EMAIL_FILE_PATH"] = unquote(parts.path)
    elif scheme.startswith("smtp"):
        tls, ssl = scheme == "smtp+tls", scheme in ("smtps", "smtp+ssl")
        out |= {
            "EMAIL_HOST": parts.hostname or "localhost",
            "EMAIL_PORT": parts.port or (465 if ssl else 587 if tls else 25),
            "EMAIL_HOST_USER": unquote(parts.username or ""),
            "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
            "EMAIL_USE_TLS": tls,
            "EMAIL_USE_SSL": ssl,
        }
    sender = parse_qs(parts.query).get("from")
    if sender:
        out["DEFAULT_FROM_EMAIL"] = sender[0]
    return out
