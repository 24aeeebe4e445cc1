"""The routing language, pure: parsing, each operator, lookups, templates, headers, signatures."""

from __future__ import annotations

import pytest

from todos.intake import routing
from todos.intake.routing import InvalidMatch, evaluate, parse_match, render

PAYLOAD = {
    "action": "completed",
    "n": 1,
    "flag": True,
    "nothing": None,
    "check_run": {"name": "lint", "conclusion": "failure", "steps": [{"id": 7}]},
}


def matches(match, payload=PAYLOAD, headers=None) -> bool:
    return evaluate(parse_match(match), headers or {}, payload)[0]


def test_an_empty_match_matches_everything():
    assert matches({})
    assert matches({"headers": {}, "payload": {}}, payload=None)


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("completed", True),
        ("created", False),
        ({"eq": "completed"}, True),
        ({"ne": "completed"}, False),
        ({"ne": "created"}, True),
        ({"in": ["created", "completed"]}, True),
        ({"in": ["created"]}, False),
        ({"not_in": ["created"]}, True),
        ({"not_in": ["completed"]}, False),
        ({"prefix": "comp"}, True),
        ({"prefix": "x"}, False),
        ({"exists": True}, True),
        ({"exists": False}, False),
        ({"prefix": "comp", "ne": "completed"}, False),
    ],
)
def test_each_operator(condition, expected):
    assert matches({"payload": {"action": condition}}) is expected


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"exists": False}, True),
        ({"exists": True}, False),
        ("x", False),
        ({"ne": "x"}, True),
        ({"in": ["x"]}, False),
        ({"not_in": ["x"]}, True),
        ({"prefix": ""}, False),
    ],
)
def test_a_missing_field(condition, expected):
    assert matches({"payload": {"no.such.field": condition}}) is expected


def test_equality_keeps_json_types_apart():
    assert matches({"payload": {"n": 1}})
    assert matches({"payload": {"n": 1.0}})
    assert not matches({"payload": {"n": True}})
    assert not matches({"payload": {"n": "1"}})
    assert matches({"payload": {"flag": True}})
    assert not matches({"payload": {"flag": 1}})
    assert matches({"payload": {"nothing": None}})
    assert matches({"payload": {"nothing": {"exists": True}}})


def test_dotted_paths_reach_into_objects_and_lists():
    assert matches({"payload": {"check_run.steps.0.id": 7}})
    assert not matches({"payload": {"check_run.steps.1.id": {"exists": True}}})
    assert not matches({"payload": {"action.length": {"exists": True}}})
    assert matches({"payload": {"check_run": {"exists": True}}})


def test_headers_match_by_lower_cased_name():
    headers = {"x-github-event": "check_run"}
    assert matches({"headers": {"X-GitHub-Event": "check_run"}}, headers=headers)
    assert not matches({"headers": {"X-GitHub-Event": "push"}}, headers=headers)
    assert matches({"headers": {"X-Missing": {"exists": False}}}, headers=headers)


def test_all_conditions_must_hold_and_all_are_traced():
    matched, checks = evaluate(parse_match({"payload": {"action": "created", "n": 1}}), {}, PAYLOAD)
    assert matched is False
    assert [(c["key"], c["ok"]) for c in checks] == [("action", False), ("n", True)]


@pytest.mark.parametrize(
    ("match", "reason"),
    [
        ([], "must be a JSON object"),
        ("{", "not JSON"),
        ({"body": {}}, "unknown section"),
        ({"payload": []}, "object of conditions"),
        ({"payload": {"a": ["x", "y"]}}, '"in"'),
        ({"payload": {"a": {}}}, "at least one operator"),
        ({"payload": {"a": {"regex": ".*"}}}, "unknown operator"),
        ({"payload": {"a": {"in": "x"}}}, "takes a list"),
        ({"payload": {"a": {"exists": "yes"}}}, "true or false"),
        ({"payload": {"a": {"prefix": 1}}}, "takes a string"),
        ({"payload": {"a..b": 1}}, "empty segments"),
        ({"payload": {".".join("a" * 40): 1}}, "at most 32 segments"),
        ({"payload": {"a": {"in": list(range(300))}}}, "at most 256"),
        ({"payload": {"a": "x" * 20_000}}, "at most 16384 bytes"),
    ],
)
def test_a_bad_match_is_refused_with_its_reason(match, reason):
    with pytest.raises(InvalidMatch, match=reason.replace("(", r"\(").replace(".", r"\.")):
        parse_match(match)


def test_a_match_given_as_json_text_parses():
    assert parse_match('{"payload": {"a": 1}}')[0].key == "a"


def test_templates_render_fields_and_report_missing_ones():
    text, missing = render(
        "{{check_run.name}}/{{ n }}/{{ flag }}/{{ nothing }}/{{ check_run.steps }}/{{ gone }}"
        "/{{ gone }}",
        PAYLOAD,
    )
    assert text == 'lint/1/true//[{"id":7}]//'
    assert missing == ["gone"]


def test_templates_never_evaluate_anything():
    text, missing = render("{{ __class__ }} {{ action.upper() }} {% if x %}", PAYLOAD)
    assert text == "  {% if x %}"
    assert missing == ["__class__", "action.upper()"]


def test_long_actual_values_are_cut_in_the_trace():
    _, (check,) = evaluate(parse_match({"payload": {"a": "b"}}), {}, {"a": "x" * 1000})
    assert len(check["actual"]) == routing.TRACE_VALUE_MAX_CHARS + 1


def test_stored_headers_drop_credentials_and_lower_case_names():
    kept = routing.stored_headers(
        [
            ("Authorization", "Bearer x"),
            ("Cookie", "a=b"),
            ("X-Hub-Signature-256", "sha256=00"),
            ("X-Signature-256", "sha256=00"),
            ("X-Gitlab-Token", "t"),
            ("X-Api-Key", "k"),
            ("X-GitHub-Event", "push"),
            ("User-Agent", "GitHub-Hookshot/1"),
        ]
    )
    assert kept == {"x-github-event": "push", "user-agent": "GitHub-Hookshot/1"}


@pytest.mark.parametrize(
    "name",
    [
        "X-Auth-Email",
        "x-authentication",
        "X-AUTH-USER",
        "X-Routing-Key",
        "Ocp-Apim-Subscription-Key",
        "X-Shopify-Hmac-Sha256",
        "x-twilio-hmac-sha1",
        "X-Webhook-Hmac",
        "X-Pass",
        "X-Sig",
        "X-Webhook-Pwd",
        "X_Session",
        "X-Jwt",
        "X-Signed",
    ],
)
def test_stored_headers_drop_auth_key_and_hmac_headers_in_any_case(name):
    kept = routing.stored_headers([(name, "credential"), ("X-GitHub-Event", "push")])
    assert kept == {"x-github-event": "push"}


@pytest.mark.parametrize(
    "name", ["X-Request-Id", "X-Keyboard", "X-Monkey", "Accept", "X-Passenger", "X-Signal"]
)
def test_stored_headers_keep_names_that_only_resemble_credentials(name):
    assert routing.stored_headers([(name, "v")]) == {name.lower(): "v"}


def test_a_credential_under_a_harmless_name_is_masked():
    token = "ghp_" + "a1B2" * 9
    kept = routing.stored_headers([("X-Note", f"Bearer {token}"), ("X-Ref", token)])
    assert token not in str(kept)
    assert kept["x-ref"].startswith("[redacted:")


def test_signatures_are_checked_in_constant_time_and_never_echoed():
    body = b'{"a": 1}'
    good = routing.sign("s", body)
    ok = routing.verify_signature("s", body, {"x-signature-256": good}, required=True)
    assert ok.ok and ok.detail["result"] == "valid"
    upper = "sha256=" + good.removeprefix("sha256=").upper()
    assert routing.verify_signature("s", body, {"x-signature-256": upper}, required=True).ok
    bad = routing.verify_signature("t", body, {"x-signature-256": good}, required=True)
    assert not bad.ok and bad.detail["result"] == "mismatch"
    assert good.removeprefix("sha256=") not in repr(bad.detail)
    assert routing.verify_signature("s", body, {}, required=False).ok
