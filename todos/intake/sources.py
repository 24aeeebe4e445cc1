"""Webhook sources and their rules: creation, secret rotation, validation (SYSTEM.md §6).

Sources and rules are configuration, not lifecycle state, so the ORM writes them; every way in
(``create_source``/``create_rule`` commands, admin, the Board) goes through these functions or
``Rule.full_clean`` so that the same checks hold everywhere.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils.crypto import constant_time_compare, salted_hmac

from switchboard.models import Endpoint, Human
from todos.intake.deliveries import new_secret
from todos.models import Rule, Source


def create_source(
    owner: Human, slug: str, *, name: str = "", verify: bool = True
) -> tuple[Source, str | None]:
    """Create a source; return it and its secret (shown once by callers), ``None`` unverified.

    Raise ``ValidationError`` for a bad or taken slug.
    """
    secret = new_secret() if verify else ""
    source = Source(owner=owner, slug=slug, name=name or slug, verify=verify, secret=secret)
    source.full_clean()
    try:
        with transaction.atomic():
            source.save()
    except IntegrityError:
        raise ValidationError({"slug": f"a source named {slug!r} exists"}) from None
    return source, (secret or None)


def rotate_secret(source: Source) -> str:
    """Give ``source`` a new secret (and turn verification on); return it, to be shown once."""
    source.secret = new_secret()
    source.verify = True
    source.save(update_fields=["secret", "verify"])
    return source.secret


def set_verify(source: Source, verify: bool) -> str | None:
    """Turn verification on (minting a secret when there is none) or off; a new secret or None."""
    minted = None
    if verify and not source.secret:
        minted = source.secret = new_secret()
    source.verify = verify
    source.save(update_fields=["secret", "verify"])
    return minted


def create_rule(
    source: Source,
    endpoint: Endpoint,
    *,
    queue: str,
    match: Any = None,
    name: str = "",
    title_template: str = "",
    work_order_template: str = "",
    max_attempts: int = 5,
    position: int | None = None,
    enabled: bool = True,
) -> Rule:
    """Append a rule to ``source`` (or put it at ``position``); raise ``ValidationError``."""
    if position is None:
        last = source.rules.aggregate(last=Max("position"))["last"]
        position = 0 if last is None else last + 10
    rule = Rule(
        source=source,
        endpoint=endpoint,
        queue=queue,
        match={} if match is None else match,
        name=name,
        title_template=title_template,
        work_order_template=work_order_template,
        max_attempts=max_attempts,
        position=position,
        enabled=enabled,
    )
    rule.full_clean()
    rule.save()
    return rule


def save_rule(rule: Rule) -> Rule:
    """Store an edited ``rule`` after ``create_rule``'s checks; raise ``ValidationError``."""
    rule.full_clean()
    rule.save()
    return rule


def set_rule_enabled(rule: Rule, enabled: bool) -> bool:
    """Enable or disable ``rule``; return whether that changed anything."""
    changed = Rule.objects.filter(pk=rule.pk).exclude(enabled=enabled).update(enabled=enabled)
    rule.enabled = enabled
    return bool(changed)


def delete_rule(rule: Rule) -> None:
    """Delete ``rule``. Events keep its id in their routing traces; no todo refers to it."""
    rule.delete()


def secret_fingerprint(secret: str) -> str:
    """A short keyed digest of ``secret``, safe to put in a page: it names which secret a form
    was drawn against, so a replayed rotation (a reload) is told from a fresh one."""
    return salted_hmac("switchboard.sources.secret", secret).hexdigest()[:24]


def rotate_secret_if_current(source_id: int, fingerprint: str) -> tuple[Source, str | None]:
    """Rotate the secret only if it is still the one ``fingerprint`` names; return the source and
    the new secret, or ``None`` when it was rotated meanwhile (a reloaded or concurrent POST)."""
    with transaction.atomic():
        source = Source.objects.select_for_update().get(pk=source_id)
        if not constant_time_compare(secret_fingerprint(source.secret), fingerprint):
            return source, None
        return source, rotate_secret(source)
