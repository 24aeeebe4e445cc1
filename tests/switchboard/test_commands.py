"""Management commands: create_operator, create_endpoint, seed_demo."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from attempts.models import TodoAttempt
from switchboard import demo, embedded
from switchboard.credentials import key_for_plaintext
from switchboard.models import DRAIN_VERBS, Endpoint, EndpointKey, Human
from tests.base import Personas
from todos.models import Rule, Source, Todo

pytestmark = pytest.mark.django_db

GOOD_PASSWORD = "violet-harbour-lantern-42"


def run(name: str, *args: str, **options: Any) -> tuple[str, str]:
    """Run a command; return its stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


# --- create_operator ------------------------------------------------------------------------------


def test_create_operator_reads_the_password_from_stdin() -> None:
    out, _ = run(
        "create_operator",
        "carol",
        "--staff",
        "--password-stdin",
        stdin=io.StringIO(GOOD_PASSWORD + "\n"),
    )

    carol = Human.objects.get(username="carol")
    assert carol.check_password(GOOD_PASSWORD)
    assert (carol.is_staff, carol.is_superuser) == (True, False)
    assert out == "Created staff carol.\n"


def test_create_operator_makes_a_plain_operator_without_staff() -> None:
    run("create_operator", "dave", "--password-stdin", stdin=io.StringIO(GOOD_PASSWORD))

    assert Human.objects.get(username="dave").is_staff is False


def test_create_operator_superuser_implies_staff() -> None:
    run(
        "create_operator",
        "erin",
        "--superuser",
        "--password-stdin",
        stdin=io.StringIO(GOOD_PASSWORD),
    )

    erin = Human.objects.get(username="erin")
    assert (erin.is_staff, erin.is_superuser) == (True, True)


def test_create_operator_refuses_an_existing_username(personas: Personas) -> None:
    with pytest.raises(CommandError, match="an operator named 'alice' already exists"):
        run("create_operator", "alice", "--password-stdin", stdin=io.StringIO(GOOD_PASSWORD))


def test_create_operator_refuses_an_empty_password() -> None:
    with pytest.raises(CommandError, match="the password is empty"):
        run("create_operator", "frank", "--password-stdin", stdin=io.StringIO("\n"))
    assert not Human.objects.filter(username="frank").exists()


def test_create_operator_runs_the_password_validators() -> None:
    with pytest.raises(CommandError, match=r"password refused: .*too common"):
        run("create_operator", "grace", "--password-stdin", stdin=io.StringIO("password123\n"))
    assert not Human.objects.filter(username="grace").exists()


def test_create_operator_refuses_two_different_passwords_at_the_prompt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = iter([GOOD_PASSWORD, GOOD_PASSWORD + "!"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))

    with pytest.raises(CommandError, match="the two passwords differ"):
        run("create_operator", "heidi")
    assert not Human.objects.filter(username="heidi").exists()


def test_create_operator_accepts_the_same_password_twice_at_the_prompt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("getpass.getpass", lambda prompt="": GOOD_PASSWORD)

    run("create_operator", "ivan")

    assert Human.objects.get(username="ivan").check_password(GOOD_PASSWORD)


def test_create_operator_refuses_a_malformed_username() -> None:
    with pytest.raises(CommandError, match="username 'bad name!'"):
        run("create_operator", "bad name!", "--password-stdin", stdin=io.StringIO(GOOD_PASSWORD))


# --- create_endpoint ------------------------------------------------------------------------------


def test_create_endpoint_prints_one_working_key_and_nothing_else(personas: Personas) -> None:
    out, err = run("create_endpoint", "--owner", "alice", "--slug", "night-shift")

    lines = out.splitlines()
    assert len(lines) == 1
    assert out == lines[0] + "\n"
    key = key_for_plaintext(lines[0])
    assert key is not None
    endpoint = Endpoint.objects.get(slug="night-shift")
    assert key.endpoint_id == endpoint.pk
    assert (endpoint.owner, endpoint.name, tuple(endpoint.verbs)) == (
        personas.alice,
        "night-shift",
        DRAIN_VERBS,
    )
    assert "night-shift" in err and key.prefix in err
    assert lines[0] not in err


def test_create_endpoint_takes_a_name_and_verbs(personas: Personas) -> None:
    run(
        "create_endpoint",
        "--owner=bob",
        "--slug=reader",
        "--name=Read only",
        "--verbs",
        " get_todo, list_todos ,list_todos",
    )

    endpoint = Endpoint.objects.get(slug="reader")
    assert (endpoint.name, endpoint.verbs) == ("Read only", ["list_todos", "get_todo"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--owner=nobody", "--slug=x1"], "no operator named 'nobody'"),
        (["--owner=alice", "--slug=Bad Slug"], "slug: "),
        (["--owner=alice", "--slug=agent-b"], "slug: Endpoint with this Slug already exists"),
        (["--owner=alice", "--slug=x2", "--verbs=claim_next,drop_tables"], "unknown verbs: "),
    ],
)
def test_create_endpoint_refuses_bad_input(
    personas: Personas, args: list[str], message: str
) -> None:
    before = (Endpoint.objects.count(), EndpointKey.objects.count())

    with pytest.raises(CommandError, match=message):
        run("create_endpoint", *args)

    assert (Endpoint.objects.count(), EndpointKey.objects.count()) == before


# --- seed_demo ------------------------------------------------------------------------------------


def _seeded_states() -> dict[str, Any]:
    todos = Todo.objects.filter(endpoint__slug=demo.ENDPOINT_SLUG)
    return {
        "states": Counter(todos.values_list("state", flat=True)),
        "queues": set(todos.values_list("queue", flat=True)),
        "dead": sum(t.dead_letter for t in todos),
        "retrying": todos.filter(state="failed", next_retry_at__isnull=False).count(),
        "outcomes": Counter(TodoAttempt.objects.values_list("outcome", "disposition")),
    }


def test_seed_demo_creates_todos_in_every_state_through_the_lifecycle(
    monkeypatch: pytest.MonkeyPatch, settings: Any, tmp_path: Path
) -> None:
    settings.DATA_DIR = tmp_path  # no server runs there, so HOST and PORT say where it listens
    monkeypatch.delenv("SWITCHBOARD_DEMO_PASSWORD", raising=False)
    monkeypatch.setenv("HOST", "demo.local")
    monkeypatch.setenv("PORT", "9000")

    out, _ = run("seed_demo", "--if-empty")

    seeded = _seeded_states()
    assert seeded["states"] == {
        "pending": 7,
        "claimed": 1,
        "completed": 1,
        "failed": 2,
        "canceled": 1,
    }
    assert seeded["queues"] == {"ci-failures", "triage"}
    assert (seeded["dead"], seeded["retrying"]) == (1, 1)
    assert seeded["outcomes"] == {
        ("completed", "done"): 1,
        ("failed", "retry_scheduled"): 1,
        ("failed", "dead_lettered"): 1,
        ("reaped", "requeued"): 1,
        (None, None): 1,  # the claim that is still open
    }
    completed = TodoAttempt.objects.get(outcome="completed")
    assert completed.artifact and completed.artifact.startswith("https://")
    assert completed.summary
    assert TodoAttempt.objects.get(outcome=None).claimant == "demo-bot/run-1"

    human = Human.objects.get(username="demo")
    assert human.is_staff
    key = Endpoint.objects.get(slug="demo-agent").keys.get()
    source = Source.objects.get(slug="demo-ci")
    assert source.verify and source.secret
    rule = Rule.objects.get(source=source)
    assert (rule.endpoint.slug, rule.queue) == ("demo-agent", "ci-failures")

    assert "http://demo.local:9000/" in out
    assert "http://demo.local:9000/admin/" in out
    (password,) = [line.split()[-1] for line in out.splitlines() if "Password" in line]
    assert human.check_password(password)
    (key_line,) = [line for line in out.splitlines() if "Agent key" in line]
    found = key_for_plaintext(key_line.split()[2])
    assert found is not None and found.pk == key.pk
    assert source.secret in out


def test_seed_demo_if_empty_is_idempotent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWITCHBOARD_DEMO_PASSWORD", raising=False)
    run("seed_demo", "--if-empty")
    before = (_seeded_states(), Human.objects.count(), EndpointKey.objects.count())

    out, err = run("seed_demo", "--if-empty")

    assert (out, err) == ("", "")
    assert (_seeded_states(), Human.objects.count(), EndpointKey.objects.count()) == before


def test_seed_demo_if_empty_leaves_a_database_with_operators_alone(personas: Personas) -> None:
    run("seed_demo", "--if-empty")

    assert not Human.objects.filter(username="demo").exists()
    assert not Todo.objects.exists()


def test_seed_demo_without_if_empty_refuses_to_seed_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWITCHBOARD_DEMO_PASSWORD", raising=False)
    run("seed_demo")

    with pytest.raises(CommandError, match="an operator named 'demo' exists already"):
        run("seed_demo")
    assert Todo.objects.count() == 12


def test_seed_demo_takes_the_password_from_the_environment_and_does_not_echo_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWITCHBOARD_DEMO_PASSWORD", "demo-password-from-env")

    out, _ = run("seed_demo", "--if-empty")

    assert Human.objects.get(username="demo").check_password("demo-password-from-env")
    assert "demo-password-from-env" not in out
    assert "SWITCHBOARD_DEMO_PASSWORD" in out


def test_create_endpoint_grants_the_a2a_verbs(personas: Personas) -> None:
    run("create_endpoint", "--owner=alice", "--slug=front", "--verbs=a2a,complete,request_input")
    assert Endpoint.objects.get(slug="front").verbs == ["complete", "request_input", "a2a"]


def _printed(out: str, label: str) -> str:
    line = next(line for line in out.splitlines() if line.strip().startswith(label))
    return line.split()[len(label.split())]


def test_seed_demo_reissue_prints_new_credentials_and_the_old_ones_stop_working(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SWITCHBOARD_DEMO_PASSWORD", raising=False)
    first, _ = run("seed_demo")
    old_password, old_key = _printed(first, "Password"), _printed(first, "Agent key")
    old_secret = Source.objects.get(slug=demo.SOURCE_SLUG).secret

    out, _ = run("seed_demo", "--reissue")

    password, key = _printed(out, "Password"), _printed(out, "Agent key")
    secret = _printed(out, "Webhook secret")
    human = Human.objects.get(username=demo.USERNAME)
    assert human.check_password(password) and not human.check_password(old_password)
    assert key_for_plaintext(old_key) is None
    assert key_for_plaintext(key) is not None
    assert key_for_plaintext(key).endpoint.slug == demo.ENDPOINT_SLUG  # type: ignore[union-attr]
    source = Source.objects.get(slug=demo.SOURCE_SLUG)
    assert source.secret == secret != old_secret and source.verify
    assert (
        EndpointKey.objects.filter(
            endpoint__slug=demo.ENDPOINT_SLUG, revoked_at__isnull=True
        ).count()
        == 1
    )
    assert "1 key(s) revoked" in out
    # The todos are left as they were.
    assert Todo.objects.count() == 12


@pytest.fixture
def no_server(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A data directory with no server's note in it, no HOST nor PORT: the defaults."""
    settings.DATA_DIR = tmp_path
    monkeypatch.delenv("HOST", raising=False)
    monkeypatch.delenv("PORT", raising=False)
    monkeypatch.delenv("SWITCHBOARD_DEMO_PASSWORD", raising=False)
    return tmp_path


def _urls(out: str) -> set[str]:
    return {word for word in out.split() if word.startswith("http")}


def test_seed_demo_reissue_prints_the_running_servers_urls(no_server: Path) -> None:
    run("seed_demo")
    # What `serve` notes in the data directory of the checkout it serves (its own pid: this
    # process stands in for it; a note whose process is gone is ignored, below).
    embedded.record_server(
        no_server, "postgres://u@db/sb", is_embedded=False, url="http://127.0.0.1:8123"
    )

    out, _ = run("seed_demo", "--reissue")

    assert _urls(out) == {
        "http://127.0.0.1:8123/login/",
        "http://127.0.0.1:8123/mcp/demo-agent)",
        "http://127.0.0.1:8123/hooks/demo-ci)",
    }


def test_seed_demo_reissue_without_a_server_takes_host_and_port_then_the_default(
    no_server: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run("seed_demo")
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    note = {"pid": int(gone.stdout), "url": "http://gone:1"}  # its process is gone: ignored
    (no_server / embedded.SERVER_RECORD).write_text(json.dumps(note))

    out, _ = run("seed_demo", "--reissue")
    assert "http://127.0.0.1:8000/login/" in out and "gone" not in out

    monkeypatch.setenv("HOST", "::")  # a wildcard bind is reached on loopback
    monkeypatch.setenv("PORT", "9001")
    out, _ = run("seed_demo", "--reissue")
    assert "http://[::1]:9001/login/" in out

    out, _ = run("seed_demo", "--reissue", "--host", "sb.local", "--port", "7000")
    assert "http://sb.local:7000/login/" in out


@pytest.mark.parametrize(
    ("host", "port", "url"),
    [
        ("127.0.0.1", 8000, "http://127.0.0.1:8000"),
        ("0.0.0.0", "8000", "http://127.0.0.1:8000"),  # noqa: S104 (a bind address read)
        ("::", 8000, "http://[::1]:8000"),
        ("::1", 8001, "http://[::1]:8001"),
        ("[::1]", 8001, "http://[::1]:8001"),
        ("sb.local", 80, "http://sb.local:80"),
    ],
)
def test_the_servers_url_is_where_this_machine_reaches_it(host: str, port: Any, url: str) -> None:
    assert embedded.server_url(host, port) == url


def test_seed_demo_reissue_takes_the_password_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SWITCHBOARD_DEMO_PASSWORD", raising=False)
    run("seed_demo")
    monkeypatch.setenv("SWITCHBOARD_DEMO_PASSWORD", "a-password-from-the-env-9")

    out, _ = run("seed_demo", "--reissue")

    assert Human.objects.get(username="demo").check_password("a-password-from-the-env-9")
    assert "a-password-from-the-env-9" not in out


def test_seed_demo_reissue_without_a_demo_says_so_and_changes_nothing(personas: Personas) -> None:
    with pytest.raises(CommandError, match="no demo to re-issue: missing operator 'demo'"):
        run("seed_demo", "--reissue")
    with pytest.raises(CommandError, match="do not go together"):
        run("seed_demo", "--reissue", "--if-empty")
