"""manage.py sql NAME: a lifecycle statement printed exactly as it runs, fragments spliced."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from todos import lifecycle, push
from todos.management.commands.sql import Command


def sql(*args: str) -> str:
    out = io.StringIO()
    call_command("sql", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_it_prints_the_text_the_transition_runs() -> None:
    assert sql("claim_next") == lifecycle.CLAIM_NEXT + "\n"
    assert sql("cancel_by_human") == lifecycle.CANCEL_BY_HUMAN + "\n"
    assert sql("claim_pushes") == push.CLAIM_PUSHES + "\n"


def test_the_fragments_are_spliced_in() -> None:
    text = sql("claim_next")

    assert "@{" not in text
    # The prior attempts' count comes from todos/limits.py, spliced in at load.
    assert f"LIMIT {lifecycle.PRIOR_ATTEMPTS}\n" in text


def test_the_variants_are_the_statements_each_caller_runs() -> None:
    assert sql("ring_due_gate") == lifecycle.RING_DUE["gate"] + "\n"
    assert sql("bulk_cancel") == lifecycle.bulk_statement("cancel", "TRUE") + "\n"
    assert sql("cancel_by_human") != sql("cancel_by_requester")


def test_list_names_every_statement_once() -> None:
    names = sql("--list").split()

    assert len(names) == len(set(names))
    assert {"claim_next", "cancel_by_requester", "pause_queue_by_system", "record_push"} <= set(
        names
    )
    assert "endpoint_scope_sql" not in names  # a fragment, not a statement
    for name in names:
        assert sql(name).strip(), name


def test_an_unknown_name_is_refused() -> None:
    with pytest.raises(CommandError, match="no statement named 'claim_nxt'"):
        sql("claim_nxt")


def test_an_unknown_name_exits_1_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        Command().run_from_argv(["manage.py", "sql", "claim_nxt"])

    assert exit_.value.code == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "no statement named 'claim_nxt'" in captured.err
