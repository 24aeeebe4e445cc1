"""The lease fence: only the holder of the claim's token may act on a fenced attempt."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

from switchboard.lib.errors import InvalidInput, LeaseConflict
from tests.base import Personas
from tests.reach import OWNER, claimed, expire_lease
from tests.rows import attempt_rows, only_attempt, snapshot, todo_row
from todos import lifecycle

Call = Callable[[UUID, str, str, str | None], Any]

# Every agent transition that guards on the holder, called with (endpoint, todo, owner, token).
FENCED_CALLS: list[tuple[str, Call]] = [
    ("heartbeat", lambda e, t, o, k: lifecycle.heartbeat(e, t, owner=o, lease_token=k)),
    ("complete", lambda e, t, o, k: lifecycle.complete(e, t, owner=o, lease_token=k)),
    ("fail", lambda e, t, o, k: lifecycle.fail(e, t, owner=o, lease_token=k)),
    ("release", lambda e, t, o, k: lifecycle.release(e, t, owner=o, lease_token=k)),
    (
        "interrupt",
        lambda e, t, o, k: lifecycle.interrupt(
            e, t, owner=o, state="input-required", lease_token=k
        ),
    ),
    ("reject", lambda e, t, o, k: lifecycle.reject(e, t, owner=o, lease_token=k)),
]
IDS = [name for name, _ in FENCED_CALLS]


def _decode(token: str) -> bytes:
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _other_token() -> str:
    return base64.urlsafe_b64encode(b"\x01" * 16).rstrip(b"=").decode()


def test_a_fenced_claim_returns_a_token_and_stores_only_its_sha256(personas: Personas) -> None:
    result = claimed(personas.endpoint_a.id, require_fence=True)

    token = result.lease_token
    assert token is not None
    raw = _decode(token)
    assert len(raw) == 16
    attempt = only_attempt(result.todo.id)
    stored = bytes(attempt["lease_token_hash"])
    assert stored == hashlib.sha256(raw).digest()
    assert len(stored) == 32
    assert token not in {str(v) for v in attempt.values()}


def test_an_unfenced_claim_returns_no_token_and_stores_no_hash(personas: Personas) -> None:
    result = claimed(personas.endpoint_a.id)

    assert result.lease_token is None
    assert only_attempt(result.todo.id)["lease_token_hash"] is None


@pytest.mark.parametrize("fenced", [True, False], ids=["fenced", "unfenced"])
def test_the_todo_row_holds_the_open_attempts_digest_only_while_the_lease_is_held(
    personas: Personas, fenced: bool
) -> None:
    # Heartbeats check the todo's copy (migrations/0003); closing the lease clears it.
    ep = personas.endpoint_a.id
    result = claimed(ep, require_fence=fenced)
    todo_id = result.todo.id

    copy = todo_row(todo_id)["lease_token_hash"]
    assert copy == only_attempt(todo_id)["lease_token_hash"]
    assert (copy is not None) is fenced

    lifecycle.release(ep, todo_id, owner=OWNER, lease_token=result.lease_token)

    row = todo_row(todo_id)
    assert (row["lease_token_hash"], row["attempt_heartbeat_at"]) == (None, None)
    assert only_attempt(todo_id)["lease_token_hash"] == copy


def test_each_fenced_claim_gets_its_own_token(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    first = claimed(ep, require_fence=True)
    second = claimed(ep, require_fence=True)

    assert first.lease_token != second.lease_token
    assert (
        only_attempt(first.todo.id)["lease_token_hash"]
        != (only_attempt(second.todo.id)["lease_token_hash"])
    )


@pytest.mark.parametrize(("name", "call"), FENCED_CALLS, ids=IDS)
def test_the_right_token_works(personas: Personas, name: str, call: Call) -> None:
    ep = personas.endpoint_a.id
    result = claimed(ep, require_fence=True)
    before = snapshot(result.todo.id)

    call(ep, result.todo.id, OWNER, result.lease_token)

    assert snapshot(result.todo.id) != before
    if name not in ("heartbeat", "interrupt"):
        assert only_attempt(result.todo.id)["ended_at"] is not None


def _conflict_like_a_non_holder(ep: UUID, todo_id: str, token: str | None, call: Call) -> None:
    """Assert ``call`` with ``token`` fails as a non-holder's call does, changing nothing."""
    before = snapshot(todo_id)
    with pytest.raises(LeaseConflict) as fenced:
        call(ep, todo_id, OWNER, token)
    assert snapshot(todo_id) == before

    # The same call by another owner: nothing in the error tells the two apart.
    with pytest.raises(LeaseConflict) as stranger:
        call(ep, todo_id, "a-stranger", token)
    assert snapshot(todo_id) == before
    assert type(fenced.value) is type(stranger.value)
    assert fenced.value.code == stranger.value.code == "conflict"
    assert str(fenced.value) == str(stranger.value)
    assert vars(fenced.value) == vars(stranger.value)


@pytest.mark.parametrize(("name", "call"), FENCED_CALLS, ids=IDS)
def test_a_wrong_token_is_a_conflict_like_a_non_holder(
    personas: Personas, name: str, call: Call
) -> None:
    ep = personas.endpoint_a.id
    result = claimed(ep, require_fence=True)

    _conflict_like_a_non_holder(ep, result.todo.id, _other_token(), call)


@pytest.mark.parametrize(("name", "call"), FENCED_CALLS, ids=IDS)
def test_no_token_on_a_fenced_attempt_is_a_conflict(
    personas: Personas, name: str, call: Call
) -> None:
    ep = personas.endpoint_a.id
    result = claimed(ep, require_fence=True)

    _conflict_like_a_non_holder(ep, result.todo.id, None, call)


@pytest.mark.parametrize(("name", "call"), FENCED_CALLS, ids=IDS)
def test_a_token_on_an_unfenced_attempt_is_a_conflict(
    personas: Personas, name: str, call: Call
) -> None:
    ep = personas.endpoint_a.id
    result = claimed(ep)

    _conflict_like_a_non_holder(ep, result.todo.id, _other_token(), call)


def test_the_token_of_a_taken_over_attempt_no_longer_works(personas: Personas) -> None:
    # The stale-worker case: same endpoint, same owner string, a new claim after the lease lapsed.
    ep = personas.endpoint_a.id
    stale = claimed(ep, require_fence=True)
    todo_id = stale.todo.id
    expire_lease(todo_id)
    fresh = lifecycle.claim(ep, todo_id, owner=OWNER, require_fence=True)
    before = snapshot(todo_id)

    with pytest.raises(LeaseConflict):
        lifecycle.heartbeat(ep, todo_id, owner=OWNER, lease_token=stale.lease_token)
    with pytest.raises(LeaseConflict):
        lifecycle.complete(ep, todo_id, owner=OWNER, lease_token=stale.lease_token)
    assert snapshot(todo_id) == before

    lifecycle.complete(ep, todo_id, owner=OWNER, lease_token=fresh.lease_token)
    assert [a["outcome"] for a in attempt_rows(todo_id)] == ["lease_expired", "completed"]


def test_the_right_token_is_still_refused_to_another_owner(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    result = claimed(ep, require_fence=True)
    before = snapshot(result.todo.id)

    with pytest.raises(LeaseConflict):
        lifecycle.complete(ep, result.todo.id, owner="thief", lease_token=result.lease_token)

    assert snapshot(result.todo.id) == before


GARBLED: list[Any] = [
    "",
    "not a token!",
    "%%%%",
    "A" * 65,
    "abc",
    base64.urlsafe_b64encode(b"\x02" * 15).rstrip(b"=").decode(),
    base64.urlsafe_b64encode(b"\x02" * 17).rstrip(b"=").decode(),
    base64.urlsafe_b64encode(b"\x02" * 32).rstrip(b"=").decode(),
    123,
]


@pytest.mark.parametrize("token", GARBLED)
def test_a_garbled_token_is_invalid_input_and_changes_nothing(
    personas: Personas, token: Any
) -> None:
    ep = personas.endpoint_a.id
    result = claimed(ep, require_fence=True)
    before = snapshot(result.todo.id)

    with pytest.raises(InvalidInput) as excinfo:
        lifecycle.complete(ep, result.todo.id, owner=OWNER, lease_token=token)

    assert excinfo.value.field == "lease_token"
    assert snapshot(result.todo.id) == before
    assert todo_row(result.todo.id)["state"] == "claimed"


def test_a_padded_token_is_the_same_token(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    result = claimed(ep, require_fence=True)
    assert result.lease_token is not None

    lifecycle.complete(ep, result.todo.id, owner=OWNER, lease_token=result.lease_token + "==")

    assert todo_row(result.todo.id)["state"] == "completed"


def test_a_token_with_stray_characters_is_invalid_input(personas: Personas) -> None:
    ep = personas.endpoint_a.id
    result = claimed(ep, require_fence=True)
    assert result.lease_token is not None
    garbled = result.lease_token[:4] + "!!!!" + result.lease_token[4:]

    with pytest.raises(InvalidInput):
        lifecycle.complete(ep, result.todo.id, owner=OWNER, lease_token=garbled)
