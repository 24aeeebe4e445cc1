"""create_source and create_rule: scriptable, stdout carries only what a script captures."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.base import Personas
from todos.intake.routing import sign
from todos.models import Rule, Source

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_source_prints_the_secret_and_nothing_else(personas: Personas):
    out, err = run("create_source", "--owner", "alice", "--slug", "gh")

    secret = out.strip()
    assert out == secret + "\n"
    assert secret.startswith("sbw_") and len(secret) > 40
    source = Source.objects.get(slug="gh")
    assert (source.owner, source.secret, source.verify) == (personas.alice, secret, True)
    assert "/hooks/gh" in err


def test_create_source_without_verification_prints_nothing(personas: Personas):
    out, _ = run("create_source", "--owner", "alice", "--slug", "open", "--no-verify")

    assert out == ""
    assert Source.objects.get(slug="open").verify is False


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--owner", "nobody", "--slug", "x"], "no operator"),
        (["--owner", "alice", "--slug", "Bad Slug"], "slug"),
    ],
)
def test_create_source_refuses_bad_input(personas: Personas, args, message):
    with pytest.raises(CommandError, match=message):
        run("create_source", *args)
    assert not Source.objects.exists()


def test_create_source_refuses_a_taken_slug(personas: Personas):
    run("create_source", "--owner", "alice", "--slug", "gh")
    with pytest.raises(CommandError, match="slug"):
        run("create_source", "--owner", "bob", "--slug", "gh")


def test_create_rule_makes_a_rule_that_routes(personas: Personas, client):
    secret, _ = run("create_source", "--owner", "alice", "--slug", "gh")
    match = {"headers": {"X-GitHub-Event": "check_run"}, "payload": {"action": "completed"}}
    out, _ = run(
        "create_rule",
        "--source",
        "gh",
        "--endpoint",
        personas.endpoint_a.slug,
        "--queue",
        "ci",
        "--match",
        json.dumps(match),
        "--title",
        "Fix {{ check_run.name }}",
        "--template",
        "See {{ check_run.html_url }}",
        "--max-attempts",
        "2",
    )
    rule = Rule.objects.get(id=int(out))
    assert (rule.queue, rule.match, rule.max_attempts) == ("ci", match, 2)

    body = json.dumps({"action": "completed", "check_run": {"name": "lint"}}).encode()
    response = client.post(
        "/hooks/gh",
        data=body,
        content_type="application/json",
        headers={"X-GitHub-Event": "check_run", "X-Signature-256": sign(secret.strip(), body)},
    )
    assert response.status_code == 202
    assert response.json()["disposition"] == "routed"


def test_create_rule_sets_the_time_of_the_todos_it_creates(personas: Personas):
    run("create_source", "--owner", "alice", "--slug", "gh")
    out, _ = run(
        "create_rule",
        *("--source", "gh", "--endpoint", "agent-a", "--queue", "ci"),
        *("--priority", "5", "--delay", "30", "--start-within", "600"),
        *("--finish-within", "3600", "--run-timeout", "120", "--dedupe-key-path", "check_run.id"),
    )
    rule = Rule.objects.get(id=int(out))
    assert (
        rule.priority,
        rule.delay_seconds,
        rule.start_within_seconds,
        rule.finish_within_seconds,
        rule.run_timeout_seconds,
        rule.dedupe_key_path,
    ) == (5, 30, 600, 3600, 120, "check_run.id")


def test_rules_append_in_order_numbered_as_the_board_numbers_them(personas: Personas, client):
    run("create_source", "--owner", "alice", "--slug", "gh")
    for queue in ("one", "two"):
        out, err = run("create_rule", "--source", "gh", "--endpoint", "agent-a", "--queue", queue)
        rule = Rule.objects.get(id=int(out))
        assert err.startswith(f"Rule #{rule.position} (id {rule.id}) on gh:")
    client.force_login(personas.alice)
    page = client.get("/sources/gh").content.decode()
    for rule in Rule.objects.all():
        assert f">#{rule.position}</span>" in page
    assert list(Rule.objects.order_by("position").values_list("queue", flat=True)) == [
        "one",
        "two",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--source", "nope", "--endpoint", "agent-a", "--queue", "q"], "no source"),
        (["--source", "gh", "--endpoint", "nope", "--queue", "q"], "no endpoint"),
        (["--source", "gh", "--endpoint", "agent-b", "--queue", "q"], "source's owner"),
        (["--source", "gh", "--endpoint", "agent-a", "--queue", "q", "--match", "{"], "JSON"),
        (
            ["--source", "gh", "--endpoint", "agent-a", "--queue", "q", "--match", '{"x": 1}'],
            "unknown section",
        ),
        (["--source", "gh", "--endpoint", "agent-a", "--queue", " "], "queue"),
        (
            ["--source", "gh", "--endpoint", "agent-a", "--queue", "q", "--max-attempts", "0"],
            "max_attempts",
        ),
        (
            ["--source", "gh", "--endpoint", "agent-a", "--queue", "q", "--run-timeout", "5"],
            "run_timeout_seconds",
        ),
        (
            ["--source", "gh", "--endpoint", "agent-a", "--queue", "q", "--priority", "2000"],
            "priority",
        ),
    ],
)
def test_create_rule_refuses_bad_input(personas: Personas, args, message):
    run("create_source", "--owner", "alice", "--slug", "gh")
    with pytest.raises(CommandError, match=message):
        run("create_rule", *args)
    assert not Rule.objects.exists()


def _rule(match: dict, queue: str = "ci", *extra: str) -> tuple[Rule, str]:
    out, err = run(
        "create_rule",
        *("--source", "gh", "--endpoint", "agent-a", "--queue", queue),
        *("--match", json.dumps(match), *extra),
    )
    return Rule.objects.get(id=int(out)), err


CHECK_RUN = {"headers": {"X-GitHub-Event": "check_run"}}
FAILED_RUN = {"headers": {"X-GitHub-Event": "check_run"}, "payload": {"action": "completed"}}


def test_create_rule_warns_when_a_broader_rule_of_the_source_already_takes_its_deliveries(
    personas: Personas,
):
    run("create_source", "--owner", "alice", "--slug", "gh")
    broad, _ = _rule(CHECK_RUN, "all", "--name", "every run")

    narrow, err = _rule(FAILED_RUN)

    first, warning = err.splitlines()
    assert first.startswith(f"Rule #{narrow.position} (id {narrow.id}) on gh:")
    assert warning == (
        f"Warning: rule #{broad.position} (id {broad.id}, 'every run'), with a broader match,"
        " already routes every delivery this one matches to agent-a/all; each such delivery"
        " becomes two todos."
    )
    assert Rule.objects.count() == 2  # created all the same


def test_create_rule_warns_when_it_takes_every_delivery_of_a_narrower_rule(personas: Personas):
    run("create_source", "--owner", "alice", "--slug", "gh")
    narrow, _ = _rule(FAILED_RUN)

    broad, err = _rule({}, "all")

    assert err.splitlines()[1:] == [
        f"Warning: this rule also matches every delivery rule #{narrow.position}"
        f" (id {narrow.id}) routes to agent-a/ci; each such delivery becomes two todos."
    ]
    assert Rule.objects.filter(pk=broad.pk, enabled=True).exists()


def test_create_rule_warns_about_the_same_match_and_names_every_overlap(personas: Personas):
    run("create_source", "--owner", "alice", "--slug", "gh")
    same, _ = _rule(FAILED_RUN)
    broader, _ = _rule(CHECK_RUN)

    _, err = _rule({"headers": {"x-github-event": "check_run"}, "payload": {"action": "completed"}})

    warnings = err.splitlines()[1:]
    assert [w.split(")", 1)[0] for w in warnings] == [
        f"Warning: rule #{same.position} (id {same.id}",
        f"Warning: rule #{broader.position} (id {broader.id}",
    ]
    assert "with the same match" in warnings[0] and "with a broader match" in warnings[1]


def test_create_rule_does_not_warn_about_rules_that_cannot_both_match(personas: Personas):
    run("create_source", "--owner", "alice", "--slug", "gh")
    run("create_source", "--owner", "alice", "--slug", "other")
    _rule(FAILED_RUN)
    _rule({"headers": {"X-GitHub-Event": "check_run"}, "payload": {"action": "created"}}, "a")
    _rule({}, "off", "--disabled")  # a disabled rule routes nothing
    run("create_rule", "--source", "other", "--endpoint", "agent-a", "--queue", "q")

    _, err = _rule({"headers": {"X-GitHub-Event": "push"}}, "pushes")

    assert len(err.splitlines()) == 1 and "Warning" not in err
