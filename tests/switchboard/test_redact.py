"""Credential masking (switchboard/lib/redact.py): what the floor masks, what it leaves alone, that
masking twice changes nothing, and that no input makes it slow. Pure: no database."""

from __future__ import annotations

import ast
import base64
import secrets
from pathlib import Path

import pytest

from switchboard.credentials import KEY_PREFIX
from switchboard.lib import redact
from switchboard.lib.redact import mask
from todos.intake.deliveries import new_secret

# Fabricated credentials in each provider's shape (none of them works anywhere).
AWS_KEY_ID = "AKIA" + "Z7EXAMPLE0K3Y9Q2"
AWS_SESSION_KEY_ID = "ASIA" + "Q2W3E4R5T6Y7U8I9"
GITHUB_CLASSIC = "ghp_" + "a1B2c3D4e5F6g7H8i9J0kLmNoPqRsTuVwXyZ"
GITHUB_FINE_GRAINED = "github_pat_" + "11ABCDEFG0abcdefghijkl_" + "Zz9" * 19 + "Zz"
SLACK_BOT = "xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_APP = "xapp-1-" + "A0123456789-1234567890123-" + "abcdef0123456789" * 4
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\nVJTUt9Us8cKjMzEfYyjiWA4R4/M2"
SHA = "3f786850e387550fdab836ed7e6dc881de23001b"
UUID = "550e8400-e29b-41d4-a716-446655440000"


def _sbk_key() -> str:
    # The format switchboard/credentials.py mints: the prefix and 32 random bytes, base64url.
    return KEY_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()


SBK = "sbk_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9z0X1c"
SBW = "sbw_" + "n0tAr3alS3cr3t-butTheR1ghtSh4pe_0123456789a"


MASKED = [
    # Tokens that carry their own prefix are replaced whole, wherever they stand.
    (f"deploy with {AWS_KEY_ID} today", "deploy with [redacted:aws_access_key_id] today"),
    (f"temp creds {AWS_SESSION_KEY_ID}.", "temp creds [redacted:aws_access_key_id]."),
    (f"push with {GITHUB_CLASSIC}", "push with [redacted:github_token]"),
    ("oauth " + "gho_" + "x" * 36, "oauth [redacted:github_token]"),
    ("app " + "ghs_" + "Ab1" * 12, "app [redacted:github_token]"),
    ("user-to-server " + "ghu_" + "9" * 36, "user-to-server [redacted:github_token]"),
    ("refresh " + "ghr_" + "z" * 36, "refresh [redacted:github_token]"),
    (f"pat={GITHUB_FINE_GRAINED}", "pat=[redacted:github_token]"),
    (f"slack {SLACK_BOT} ok", "slack [redacted:slack_token] ok"),
    ("user token " + "xoxp-1234-5678-abcdefabcdef", "user token [redacted:slack_token]"),
    ("legacy " + "xoxa-2-abcdef123456", "legacy [redacted:slack_token]"),
    (f"socket mode {SLACK_APP}", "socket mode [redacted:slack_token]"),
    (f"got {JWT} back", "got [redacted:jwt] back"),
    (f"key {SBK} minted", "key [redacted:switchboard_key] minted"),
    (f"secret:{SBW}", "secret:[redacted:webhook_secret]"),
    # A PEM private key goes whole, header to footer; a block cut before its END goes to the end.
    (
        f"before\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n"
        "-----END RSA PRIVATE KEY-----\nafter",
        "before\n[redacted:private_key]\nafter",
    ),
    (
        f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY----- then "
        f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}\n-----END EC PRIVATE KEY-----",
        "[redacted:private_key] then [redacted:private_key]",
    ),
    (
        f"key: -----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}",
        "key: [redacted:private_key]",
    ),
    # Authorization values keep their header and scheme.
    (
        "curl -H 'Authorization: Bearer abc.def' https://api",
        "curl -H 'Authorization: Bearer [redacted:authorization]' https://api",
    ),
    ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [redacted:authorization]"),
    ('{"authorization": "token 0123abcd"}', '{"authorization": "token [redacted:authorization]"}'),
    (
        "Proxy-Authorization: basic Zm9vOmJhcg==",
        "Proxy-Authorization: basic [redacted:authorization]",
    ),
    (
        "sent bearer dGhpcy1pcy1hLWxvbmctdG9rZW4= upstream",
        "sent bearer [redacted:bearer] upstream",
    ),
    (f"Authorization: Bearer {JWT}", "Authorization: Bearer [redacted:jwt]"),
    (f"Authorization: Bearer {SBK}", "Authorization: Bearer [redacted:switchboard_key]"),
    # A URL's userinfo password.
    (
        "DATABASE_URL=postgresql://app:s3cr3t@db:5432/app",
        "DATABASE_URL=postgresql://app:[redacted:url_password]@db:5432/app",
    ),
    # Pairs keep the name and the separator, quotes included.
    ("password=hunter2 and then", "password=[redacted:password] and then"),
    ("PASSWORD: hunter2", "PASSWORD: [redacted:password]"),
    ("db_passwd = x", "db_passwd = [redacted:password]"),
    ("--passphrase=correct", "--passphrase=[redacted:password]"),
    (
        '{"password": "correct horse battery staple", "user": "bob"}',
        '{"password": "[redacted:password]", "user": "bob"}',
    ),
    ('{"password":"a\\"b"}', '{"password":"[redacted:password]"}'),
    ("{'password': 'pa ss'}", "{'password': '[redacted:password]'}"),
    # Cut inside the quoted value: masked to the end all the same.
    (
        '{"user": "bob", "password": "correct horse bat',
        '{"user": "bob", "password": "[redacted:password]',
    ),
    ("secret=abc123", "secret=[redacted:secret]"),
    ("SECRET_KEY=django-insecure-abc", "SECRET_KEY=[redacted:secret]"),
    ('"client_secret": "s"', '"client_secret": "[redacted:secret]"'),
    ("private_key: base64stuff", "private_key: [redacted:secret]"),
    ("token=abcdefgh1234", "token=[redacted:token]"),
    ("?access_token=abcdefgh1234&page=2", "?access_token=[redacted:token]&page=2"),
    ("X-Api-Key: 0123456789abcdef", "X-Api-Key: [redacted:token]"),
    ('{"api_key": "0123456789abcdef"}', '{"api_key": "[redacted:token]"}'),
    ("apikey=0123456789abcdef", "apikey=[redacted:token]"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = [redacted:token]",
    ),
    (f"token={UUID}", "token=[redacted:token]"),
    # A token-shaped value inside a pair is masked once, by its own rule.
    (f"token={GITHUB_CLASSIC}", "token=[redacted:github_token]"),
    (f'{{"token": "{JWT}"}}', '{"token": "[redacted:jwt]"}'),
]

KEPT = [
    "",
    "Investigated the flaky test; the fix is in the retry loop. Opened a PR for review.",
    "Réglé : le fichier « config » est corrigé — 日本語のテキストも大丈夫。",
    f"commit {SHA} fixes it",
    f"see {SHA[:12]} and {SHA.upper()}",
    f"todo {UUID} is done",
    "the password policy requires twelve characters",
    "Passwords must be rotated; reset your password from the account page.",
    "secrets are stored in the vault",
    "the token expired, so I asked for a new token",
    "token: none",
    "token=expired",
    '{"token": "abc"}',
    "send a Bearer token in the Authorization header",
    "bearer authentication",
    "max_tokens: 4096, input_tokens=1234",
    "postgresql://postgres@127.0.0.1:5432/app",
    "git@github.com:example/repo.git",
    "ghp_short and xoxb- and sbk_ and AKIA",
    "the key prefix sbk_Q1w2E3r4 identifies it",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0B\n-----END PUBLIC KEY-----",
    "password=",
    'password=""',
    "sha256=" + "ab" * 32,
]


@pytest.mark.parametrize(("text", "expected"), MASKED)
def test_a_credential_is_replaced_by_its_kind_and_its_name_is_kept(
    text: str, expected: str
) -> None:
    assert mask(text) == (expected, True)


@pytest.mark.parametrize("text", KEPT)
def test_text_without_a_credential_value_is_returned_unchanged(text: str) -> None:
    assert mask(text) == (text, False)


def test_a_freshly_minted_endpoint_key_is_masked() -> None:
    key = _sbk_key()
    assert len(key) == len("sbk_") + 43

    assert mask(f"MCP bearer: {key}") == ("MCP bearer: [redacted:switchboard_key]", True)


def test_a_fresh_webhook_source_secret_is_masked() -> None:
    assert mask(f"secret is {new_secret()}") == ("secret is [redacted:webhook_secret]", True)


def test_a_key_cut_by_a_cap_is_still_masked() -> None:
    cut = _sbk_key()[: len("sbk_") + 20]

    assert mask(f"note: {cut}") == ("note: [redacted:switchboard_key]", True)


@pytest.mark.parametrize("text", [text for text, _ in MASKED] + KEPT)
def test_masking_a_masked_text_changes_nothing(text: str) -> None:
    once, _ = mask(text)

    assert mask(once) == (once, False)


@pytest.mark.parametrize("text", [text for text, _ in MASKED])
def test_cutting_a_masked_text_anywhere_leaves_nothing_to_mask(text: str) -> None:
    # A caller that must fit its cap cuts again after masking; a marker cut in half is not
    # mistaken for a value, so masking the cut text changes nothing either.
    once, _ = mask(text)
    for end in range(len(once) + 1):
        cut = once[:end]
        assert mask(cut) == (cut, False), cut


PATHOLOGICAL = [
    ("a" * 100_000 + "!", False),
    ("=" * 100_000, False),
    (" " * 100_000, False),
    ("password" * 12_500, False),
    ("password=" * 11_112, True),
    ("password=a " * 9_091, True),
    ('password: "' + '\\"' * 50_000, True),
    ("token:" + "-" * 100_000, True),
    ("eyJ" + "a." * 50_000, False),
    ("eyJaaaa." * 12_500, True),
    ("-----BEGIN PRIVATE KEY-----" * 3_704, True),
    ("-----BEGIN " * 9_091 + "PRIVATE", False),
    ("Bearer " * 14_286, False),
    ("Authorization: Bearer " * 4_546, True),
    ("a://" + "b:" * 50_000, False),
    ("https://u:" + "p" * 100_000, False),
    ("AKIA" * 25_000, False),
    (AWS_KEY_ID + " " + "sbk_" * 25_000, True),
    ("é" * 50_000 + " token=abcdefghij", True),
]


@pytest.mark.parametrize(
    ("text", "changed"), PATHOLOGICAL, ids=[str(i) for i in range(len(PATHOLOGICAL))]
)
def test_a_pathological_100_kb_input_is_masked_in_linear_time(text: str, changed: bool) -> None:
    # Shapes that make a backtracking engine run for hours; RE2 finishes each in milliseconds.
    assert len(text.encode()) >= 98_000

    masked, did = mask(text)

    assert did is changed
    assert mask(masked) == (masked, False)


def test_every_rule_has_the_triggers_that_let_mask_skip_clean_text() -> None:
    assert set(redact.TRIGGERS) == {rule.kind for rule in redact.RULES}
    for kind, triggers in redact.TRIGGERS.items():
        assert triggers and all(t == t.casefold() for t in triggers), kind


@pytest.mark.parametrize(
    "text",
    [
        "pa\u017f\u017fword=hunter2",  # long s: (?i) folds it to s
        "API_\u212aEY: abcdefghijkl",  # the Kelvin sign folds to k
        "Authorization: Bearer abcdefghijklmnopqrstu",
    ],
)
def test_case_folded_spellings_still_reach_the_patterns(text: str) -> None:
    assert redact.mask(text)[1] is True


def test_every_rule_names_a_distinct_kind() -> None:
    kinds = [rule.kind for rule in redact.RULES]
    assert len(kinds) == len(set(kinds))


def test_the_module_imports_nothing_but_the_standard_library_and_re2() -> None:
    # switchboard/lib sits below every app: mask must be callable from anywhere without a cycle.
    tree = ast.parse(Path(redact.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }

    assert imported == {"__future__", "dataclasses", "typing", "re", "re2"}
