"""EMAIL_URL read into Django's mail settings (switchboard/lib/emailurl.py)."""

from __future__ import annotations

import os

import pytest
from django.conf import settings

from switchboard.lib import emailurl

SMTP = "django.core.mail.backends.smtp.EmailBackend"


def test_the_schemes_and_their_defaults() -> None:
    assert emailurl.parse("console://") == {
        "EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"
    }
    tls = emailurl.parse("smtp+tls://ops%40example.com:p%2Fw@mail.example.com?from=al@ex.com")
    assert tls == {
        "EMAIL_BACKEND": SMTP,
        "EMAIL_HOST": "mail.example.com",
        "EMAIL_PORT": 587,
        "EMAIL_HOST_USER": "ops@example.com",
        "EMAIL_HOST_PASSWORD": "p/w",
        "EMAIL_USE_TLS": True,
        "EMAIL_USE_SSL": False,
        "DEFAULT_FROM_EMAIL": "al@ex.com",
    }
    ssl = emailurl.parse("smtps://mail.example.com")
    assert (ssl["EMAIL_PORT"], ssl["EMAIL_USE_SSL"], ssl["EMAIL_USE_TLS"]) == (465, True, False)
    assert emailurl.parse("smtp://localhost:2525")["EMAIL_PORT"] == 2525
    assert emailurl.parse("file:///var/mail/sb")["EMAIL_FILE_PATH"] == "/var/mail/sb"
    with pytest.raises(ValueError, match="unknown scheme"):
        emailurl.parse("sendgrid://key")


def test_the_default_is_the_console_backend() -> None:
    # The test run's backend is pytest-django's locmem; the settings' own default is console.
    from switchboard import settings as product

    if "EMAIL_URL" not in os.environ:
        assert product.EMAIL_BACKEND == "django.core.mail.backends.console.EmailBackend"
    assert settings.DEFAULT_FROM_EMAIL
