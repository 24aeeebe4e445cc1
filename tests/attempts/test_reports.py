"""What an attempt records: summary and claimant are cut, never refused; artifact is validated.

Tested on the rules directly and through every transition that records them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest
from django.test import override_settings

from attempts import rules
from switchboard.lib.errors import InvalidInput
from switchboard.scope import Scope
from tests.base import Personas
from tests.reach import OWNER, claimed, new_todo
from tests.rows import only_attempt, snapshot, todo_row
from todos import lifecycle

ALLOWED_SCHEMES = ["mcp", "https", "s3", "gs"]

# --- summary -----------------------------------------------------------------------------------

# A 3-byte character straddling byte 2048: 2046 + 3 = 2049 bytes, so the euro sign must go whole.
EURO_AT_THE_EDGE = "a" * 2046 + "€"
# A 4-byte character straddling it: 2047 + 4 = 2051.
EMOJI_AT_THE_EDGE = "b" * 2047 + "😀" + "tail"


@pytest.mark.parametrize(
    ("text", "expected", "truncated"),
    [
        (None, None, False),
        ("", "", False),
        ("short", "short", False),
        ("x" * 2048, "x" * 2048, False),
        ("x" * 2049, "x" * 2048, True),
        (EURO_AT_THE_EDGE, "a" * 2046, True),
        (EMOJI_AT_THE_EDGE, "b" * 2047, True),
        ("é" * 1025, "é" * 1024, True),
        ("a\x00b", "ab", False),
        ("\x00" * 10 + "x" * 2048, "x" * 2048, False),
        ("line one\nline two\ttab", "line one\nline two\ttab", False),
    ],
)
def test_summary_is_cut_to_2048_bytes_at_a_character_boundary_without_nul(
    text: str | None, expected: str | None, truncated: bool
) -> None:
    assert rules.summary(text) == (expected, truncated)
    if expected is not None:
        assert len(expected.encode()) <= 2048


def test_a_summary_that_is_not_a_string_is_invalid() -> None:
    with pytest.raises(InvalidInput) as excinfo:
        rules.summary(42)  # type: ignore[arg-type]

    assert excinfo.value.field == "summary"


SummaryCall = Callable[[Personas, UUID, str, str], Any]

# Each transition that records a summary on the attempt it closes.
SUMMARY_CALLS: list[tuple[str, SummaryCall]] = [
    ("complete", lambda p, e, t, s: lifecycle.complete(e, t, owner=OWNER, summary=s)),
    ("fail", lambda p, e, t, s: lifecycle.fail(e, t, owner=OWNER, summary=s)),
    ("release", lambda p, e, t, s: lifecycle.release(e, t, owner=OWNER, summary=s)),
    ("reject", lambda p, e, t, s: lifecycle.reject(e, t, owner=OWNER, summary=s)),
    ("cancel", lambda p, e, t, s: lifecycle.cancel(Scope.of_human(p.alice.id), t, reason=s)),
    ("operator_complete", lambda p, e, t, s: lifecycle.operator_complete(p.alice.id, t, summary=s)),
    ("operator_fail", lambda p, e, t, s: lifecycle.operator_fail(p.alice.id, t, summary=s)),
    ("operator_release", lambda p, e, t, s: lifecycle.operator_release(p.alice.id, t, summary=s)),
]


@pytest.mark.parametrize(("name", "call"), SUMMARY_CALLS, ids=[n for n, _ in SUMMARY_CALLS])
def test_a_long_summary_is_stored_truncated_and_flagged(
    personas: Personas, name: str, call: SummaryCall
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    call(personas, ep, todo_id, "\x00" + EURO_AT_THE_EDGE)

    attempt = only_attempt(todo_id)
    assert attempt["ended_at"] is not None
    assert attempt["summary"] == "a" * 2046
    assert attempt["summary_truncated"] is True


@pytest.mark.parametrize(("name", "call"), SUMMARY_CALLS, ids=[n for n, _ in SUMMARY_CALLS])
def test_a_short_summary_is_stored_as_given_without_nul(
    personas: Personas, name: str, call: SummaryCall
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    call(personas, ep, todo_id, "tests\x00 passed · 3/5")

    attempt = only_attempt(todo_id)
    assert (attempt["summary"], attempt["summary_truncated"]) == ("tests passed · 3/5", False)


# --- claimant ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, None),
        ("harness/buildbox/ci-fixer/run-43", "harness/buildbox/ci-fixer/run-43"),
        ("run\x07-1\n", "run-1"),
        ("\x1b[31mred\x1b[0m", "[31mred[0m"),
        ("tab\there", "tabhere"),
        ("c" * 200, "c" * 128),
        ("é" * 100, "é" * 64),
        ("a" * 127 + "é", "a" * 127),
        ("  padded  ", "padded"),
        ("", None),
        ("\x00\x01\n", None),
    ],
)
def test_claimant_is_stripped_of_control_characters_and_cut_to_128_bytes(
    text: str | None, expected: str | None
) -> None:
    assert rules.claimant(text) == expected


def test_a_claimant_is_stored_stripped_and_cut_on_the_attempt(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep)

    lifecycle.claim(ep, todo.id, owner=OWNER, claimant="run\x00\x07-" + "é" * 100)

    claimant = only_attempt(todo.id)["claimant"]
    assert claimant == "run-" + "é" * 62
    assert len(claimant.encode()) == 128


def test_a_claimant_that_is_not_a_string_is_invalid_and_nothing_is_claimed(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo = new_todo(ep)
    before = snapshot(todo.id)

    with pytest.raises(InvalidInput) as excinfo:
        lifecycle.claim(ep, todo.id, owner=OWNER, claimant=["me"])  # type: ignore[arg-type]

    assert excinfo.value.field == "claimant"
    assert snapshot(todo.id) == before


# --- artifact ----------------------------------------------------------------------------------

GOOD_ARTIFACTS = [
    "mcp://cairn/Ab12Cd34",
    "https://ci.example.test/runs/43/log?x=1#end",
    "s3://bucket/path/to/log.txt",
    "gs://bucket/object",
    "HTTPS://EXAMPLE.TEST/UPPER",
    "https://example.test/" + "p" * (512 - len("https://example.test/")),
]

BAD_ARTIFACTS = [
    "relative/path.txt",
    "/absolute/path",
    "//host/no-scheme",
    "https://exa mple.test/x",
    "https://example.test/x\n",
    "\thttps://example.test/x",
    "https://example.test/\x07bell",
    "https://example.test/\u200bzero-width",
    "https://user:secret@example.test/x",
    "https://user@example.test/x",
    "ftp://example.test/file",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "data:text/plain,hi",
    "mcp:",
    "https://example.test/" + "p" * (513 - len("https://example.test/")),
    "https://example.test/" + "é" * 250,
    42,
]


@pytest.mark.parametrize("uri", GOOD_ARTIFACTS)
def test_an_allowed_artifact_passes_the_rule(uri: str) -> None:
    assert rules.artifact(uri, ALLOWED_SCHEMES) == uri


@pytest.mark.parametrize("uri", BAD_ARTIFACTS)
def test_a_malformed_artifact_fails_the_rule(uri: Any) -> None:
    with pytest.raises(InvalidInput) as excinfo:
        rules.artifact(uri, ALLOWED_SCHEMES)

    assert excinfo.value.field == "artifact"


@pytest.mark.parametrize("uri", GOOD_ARTIFACTS)
def test_an_allowed_artifact_is_stored_on_the_closed_attempt(personas: Personas, uri: str) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    lifecycle.complete(ep, todo_id, owner=OWNER, artifact=uri)

    assert only_attempt(todo_id)["artifact"] == uri


ArtifactCall = Callable[[Personas, UUID, str, Any], Any]

ARTIFACT_CALLS: list[tuple[str, ArtifactCall]] = [
    ("complete", lambda p, e, t, a: lifecycle.complete(e, t, owner=OWNER, artifact=a)),
    ("fail", lambda p, e, t, a: lifecycle.fail(e, t, owner=OWNER, artifact=a)),
    (
        "operator_complete",
        lambda p, e, t, a: lifecycle.operator_complete(p.alice.id, t, artifact=a),
    ),
    ("operator_fail", lambda p, e, t, a: lifecycle.operator_fail(p.alice.id, t, artifact=a)),
]


@pytest.mark.parametrize("uri", BAD_ARTIFACTS)
@pytest.mark.parametrize(("name", "call"), ARTIFACT_CALLS, ids=[n for n, _ in ARTIFACT_CALLS])
def test_a_malformed_artifact_is_refused_and_nothing_changes(
    personas: Personas, name: str, call: ArtifactCall, uri: Any
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id
    before = snapshot(todo_id)

    with pytest.raises(InvalidInput) as excinfo:
        call(personas, ep, todo_id, uri)

    assert excinfo.value.field == "artifact"
    assert snapshot(todo_id) == before
    assert todo_row(todo_id)["state"] == "claimed"
    assert only_attempt(todo_id)["ended_at"] is None


@override_settings(SWITCHBOARD_ARTIFACT_SCHEMES=["mcp"])
def test_the_artifact_schemes_follow_the_setting(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    with pytest.raises(InvalidInput):
        lifecycle.complete(ep, todo_id, owner=OWNER, artifact="https://example.test/x")
    lifecycle.complete(ep, todo_id, owner=OWNER, artifact="mcp://cairn/x")

    assert only_attempt(todo_id)["artifact"] == "mcp://cairn/x"


# --- summary from result -----------------------------------------------------------------------

RESULT = {"b": [1, 2], "a": "héllo", "nested": {"ok": True, "none": None}}
COMPACT = '{"b":[1,2],"a":"héllo","nested":{"ok":true,"none":null}}'


def test_no_summary_is_derived_from_the_result_by_default(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    lifecycle.complete(ep, todo_id, owner=OWNER, result=RESULT)

    assert only_attempt(todo_id)["summary"] is None
    assert todo_row(todo_id)["result"] == RESULT


@override_settings(SWITCHBOARD_ATTEMPT_SUMMARY_FROM_RESULT=True)
@pytest.mark.parametrize("transition", ["complete", "fail", "operator_complete"])
def test_the_switch_derives_the_summary_from_the_compact_json_of_the_result(
    personas: Personas, transition: str
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    if transition == "complete":
        lifecycle.complete(ep, todo_id, owner=OWNER, result=RESULT)
    elif transition == "fail":
        lifecycle.fail(ep, todo_id, owner=OWNER, result=RESULT)
    else:
        lifecycle.operator_complete(personas.alice.id, todo_id, result=RESULT)

    attempt = only_attempt(todo_id)
    assert attempt["summary"] == COMPACT
    assert json.loads(attempt["summary"]) == RESULT
    assert attempt["summary_truncated"] is False


@override_settings(SWITCHBOARD_ATTEMPT_SUMMARY_FROM_RESULT=True)
def test_with_the_switch_a_given_summary_still_wins(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    lifecycle.complete(ep, todo_id, owner=OWNER, result=RESULT, summary="my own words")

    assert only_attempt(todo_id)["summary"] == "my own words"


@override_settings(SWITCHBOARD_ATTEMPT_SUMMARY_FROM_RESULT=True)
def test_with_the_switch_a_large_result_is_truncated_like_any_summary(
    personas: Personas,
) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    lifecycle.complete(ep, todo_id, owner=OWNER, result={"log": "€" * 1000})

    attempt = only_attempt(todo_id)
    assert attempt["summary_truncated"] is True
    assert len(attempt["summary"].encode()) <= 2048
    assert attempt["summary"].startswith('{"log":"€€')
    assert todo_row(todo_id)["result"] == {"log": "€" * 1000}


@override_settings(SWITCHBOARD_ATTEMPT_SUMMARY_FROM_RESULT=True)
def test_with_the_switch_no_result_means_no_summary(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    todo_id = claimed(ep).todo.id

    lifecycle.complete(ep, todo_id, owner=OWNER)

    assert only_attempt(todo_id)["summary"] is None
