"""Mask credentials in short texts (agent notes, span attributes) before they are stored.

``mask(text)`` replaces every credential value that a fixed floor of patterns recognises with
``[redacted:<kind>]`` and says whether it replaced anything. A credential that comes as a pair
keeps its name (``password=[redacted:password]``, ``Authorization: Bearer
[redacted:authorization]``, ``"api_key": "[redacted:token]"``); one that carries its own
prefix (an ``sbk_`` key, a GitHub token, a PEM block) is replaced whole. What it recognises is
``RULES``, in the order it applies them:

- PEM private-key blocks, from ``-----BEGIN … PRIVATE KEY-----`` to the matching END line, or to
  the end of the text when the END line was cut off;
- JWTs (a base64url ``eyJ…`` header and two more dot-separated segments);
- AWS access key ids (``AKIA``/``ASIA`` and 16 more), GitHub tokens (``ghp_``, ``gho_``,
  ``ghs_``, ``ghu_``, ``ghr_``, ``github_pat_``), Slack tokens (``xoxb-``, ``xoxp-``, ``xoxa-``,
  … and ``xapp-``);
- Switchboard's own endpoint keys (``sbk_``, ``switchboard/credentials.py``) and webhook source
  secrets (``sbw_``, ``todos/intake.py``), both 43 base64url characters after the prefix;
- ``Authorization: Bearer|Basic|Token <value>``, and ``Bearer <value>`` anywhere when the value
  is at least 16 characters (so that "a bearer token" in prose stays);
- the password of a URL's userinfo (``postgresql://user:<value>@host``);
- ``name=value`` and ``name: value`` pairs, JSON and Python string pairs included, whose name
  ends in password/passwd/passphrase, secret/private_key (``client_secret``, ``SECRET_KEY``),
  or token/api_key/access_key (``access_token``, ``X-Api-Key``, ``aws_secret_access_key``). A
  token-like value shorter than 8 characters is kept (``token: none``, ``token=expired``): real
  tokens are longer. A name without a value ("the password policy") is left alone.

It is a floor, not a scanner: a credential in none of these shapes passes through.

Callers cut first, then mask, and pass at most a few KiB (an activity note's 512 bytes, a span
attribute's cap). Every pattern is compiled by RE2 (``google-re2``), whose matching time is
linear in the input whatever the text, so no input can make a pattern backtrack (the one
standard-library expression, the triggers' scan, is an alternation of literals); ``mask``
still walks the text once per rule that may match, and cutting first keeps that cost bounded.
A secret that straddles the cut is masked when the part kept still has its pattern's shape
(the length floors in ``RULES`` are well under the full lengths for that reason). The result
can be longer than the input, by a marker's length per value, so a caller writing into a
capped column cuts the masked text again: a cut never uncovers anything, and masking the cut
text changes nothing (a value that is already a marker, whole or cut short, is kept).

This module is pure: no I/O, no Django, no app imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import re2

MARKER_PREFIX = "[redacted:"


@dataclass(frozen=True, slots=True)
class Rule:
    """One credential shape. The pattern's capturing groups are the alternative places the value
    can sit (one per quoting style); the first that took part in a match is replaced, and the
    rest of the match (a name, a separator, quotes) is kept. Values shorter than ``min_value``
    are kept too."""

    kind: str
    pattern: Any  # a compiled re2 pattern (google-re2 ships no type information)
    min_value: int = 1


def _rule(kind: str, pattern: str, min_value: int = 1) -> Rule:
    compiled = re2.compile(pattern)
    assert compiled.groups >= 1, f"{kind}: the pattern captures no value"
    return Rule(kind, compiled, min_value)


# A pair's value: a double-quoted string (JSON, with its escapes) or a single-quoted one, either
# up to the end of its line when the closing quote is missing (the text was cut inside it), or a
# bare run that ends at whitespace, a quote or a list/query delimiter. Three capturing groups.
_VALUE = r"""(?:"((?:[^"\\\n]|\\.)*)"?|'([^'\n]*)'?|([^\s"'`,;&]+))"""
# A pair's name: an identifier ending in one of the words (group-free), then the separator.
_NAME_PREFIX = r"(?i)[A-Za-z0-9_.-]*(?:"
_NAME_SUFFIX = r""")(?:[_-]?key)?["']?[ \t]*[:=][ \t]*"""


def _pair(kind: str, words: str, min_value: int = 1) -> Rule:
    return _rule(kind, _NAME_PREFIX + words + _NAME_SUFFIX + _VALUE, min_value)


RULES: tuple[Rule, ...] = (
    # Whole blocks first, so the base64 inside a key block is not matched piecemeal below. The
    # lazy body stops at the first END line; ``\z`` takes a block whose END was cut off.
    _rule(
        "private_key",
        r"(-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z))",
    ),
    # The header is base64url JSON, so it starts "eyJ" ({"); the signature may be empty (alg none).
    _rule("jwt", r"\b(eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*)"),
    _rule("aws_access_key_id", r"\b((?:AKIA|ASIA)[A-Z0-9]{16})\b"),
    _rule("github_token", r"\b(gh[opsur]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    _rule("slack_token", r"\b(xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,})"),
    # 43 characters after the prefix when whole; 16 are enough to mask a cut one, and more than
    # the 8 that the Board and the admin show to tell keys apart (``sbk_`` + 8 stays readable).
    _rule("switchboard_key", r"(sbk_[A-Za-z0-9_-]{16,})"),
    _rule("webhook_secret", r"(sbw_[A-Za-z0-9_-]{16,})"),
    # The value's characters are RFC 6750's b64token (plus '=' anywhere, for Basic): a marker
    # ('[') never matches, so these leave masked text alone.
    _rule(
        "authorization",
        r"""(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?(?:bearer|basic|token)[ \t]+"""
        r"([A-Za-z0-9._~+/=-]+)",
    ),
    _rule("bearer", r"(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)"),
    _rule("url_password", r"(?i)\b[a-z][a-z0-9+.-]*://[^/\s:@]+:([^/\s@]+)@"),
    _pair("password", "password|passwd|passphrase"),
    _pair("secret", r"secret|private[_-]?key"),
    _pair("token", r"token|api[_-]?key|access[_-]?key", min_value=8),
)


def _is_marker(value: str) -> bool:
    """Whether ``value`` is a marker, whole or cut short (``[redacted:pass``, even ``[``)."""
    return value.startswith(MARKER_PREFIX) or MARKER_PREFIX.startswith(value)


def _replacer(rule: Rule) -> Any:
    marker = f"{MARKER_PREFIX}{rule.kind}]"

    def replace(match: Any) -> str:
        whole: str = match.group(0)
        for group in range(1, rule.pattern.groups + 1):
            value = match.group(group)
            if value is None:
                continue
            if len(value) < rule.min_value or _is_marker(value):
                return whole
            start = match.start(group) - match.start()
            return whole[:start] + marker + whole[start + len(value) :]
        return whole

    return replace


_REPLACERS = tuple((rule.pattern, _replacer(rule)) for rule in RULES)

# A literal that every match of each rule contains, case-folded: a text that holds none of them
# matches no rule, and ``mask`` returns it without running the patterns. Each pass of a pattern
# through the RE2 binding costs microseconds whatever the text, so thirteen passes cost more
# than an OTLP span's whole translation; the substring checks cost a fraction of one. Sound
# because a rule that matches nothing replaces nothing, so no later rule can see a changed text.
# casefold() maps every character that a (?i) pattern folds to an ASCII letter (the long s,
# the Kelvin sign) onto that letter. A rule added to RULES needs its entry here (a test checks).
TRIGGERS: dict[str, tuple[str, ...]] = {
    "private_key": ("-----begin",),
    "jwt": ("eyj",),
    "aws_access_key_id": ("akia", "asia"),
    "github_token": ("gho_", "ghp_", "ghs_", "ghu_", "ghr_", "github_pat_"),
    "slack_token": ("xox", "xapp-"),
    "switchboard_key": ("sbk_",),
    "webhook_secret": ("sbw_",),
    "authorization": ("authorization",),
    "bearer": ("bearer",),
    "url_password": ("://",),
    "password": ("password", "passwd", "passphrase"),
    "secret": ("secret", "private"),
    "token": ("token", "api_key", "api-key", "apikey", "access_key", "access-key", "accesskey"),
}
_TRIGGERS = tuple(sorted({t for triggers in TRIGGERS.values() for t in triggers}))
# One pass of the standard library's matcher over the folded text finds any of them: literals
# only (no repetition, so nothing to backtrack into), and in C, where a Python loop over thirty
# substring checks cost three times as much on the short texts spans carry.
_TRIGGERED = re.compile("|".join(re.escape(t) for t in _TRIGGERS))


def mask(text: str) -> tuple[str, bool]:
    """Return ``text`` with every credential value ``RULES`` recognise replaced by
    ``[redacted:<kind>]``, and whether anything was replaced.

    Precondition: ``text`` is already cut to its column's cap (a few KiB at most); see the
    module docstring for why, and for cutting the result again.
    """
    if _TRIGGERED.search(text.casefold()) is None:
        return text, False
    masked = text
    for pattern, replace in _REPLACERS:
        masked = pattern.sub(replace, masked)
    return masked, masked != text
