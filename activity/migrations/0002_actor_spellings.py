"""Rewrite the old spellings of who acted to the one each actor has now
(switchboard/lib/actors.py, docs/decisions/0030-one-actor.md).

Forward, in ``todo_activity``:

- an A2A requester's answer, ``a2a:<slug>``, becomes ``requester:<the todo's endpoint id>``
  (a requester acts only in its endpoint's scope, so the todo's endpoint is the one it named);
- an A2A requester's cancel, ``endpoint:<uuid>``, becomes ``requester:<uuid>``;
- an agent's row (a note, an interrupt, a reject), which stored its lease's owner, becomes
  ``endpoint:<the todo's endpoint id>``: the owner stays on the attempt (``todo_attempts.owner``);

an MCP agent's lease (``todos.owner``, ``todo_attempts.owner``), ``endpoint:<slug>``, becomes
``endpoint:<uuid>`` (the lifecycle compares a report's owner with the lease's, so a lease held
across the upgrade must be spelled as the upgraded server spells it); in ``queue_pauses``,
``manage.py`` becomes ``command:queue``; in a todo's ``input_request``, an answer's ``from``
(``human:<username>``, ``requester``) becomes ``human:<id>`` / ``requester:<endpoint id>``.
Human references (``human:<id>``), ``sweeper`` and ``doorbell`` were already spelled so.

Reverse, the nearest old form: a requester's cancel and answer exactly as before (``a2a:`` with
the endpoint's slug now), an agent's row its attempt's owner (the one it had, for every row
that names its attempt; a row that names none keeps ``endpoint:<uuid>``), the leases, the
command and the answers' ``from`` as before.

``todo_activity`` and ``todo_attempts`` can be large, so each is rewritten in one pass of batches
in primary-key order, each committing on its own (``atomic = False``); a batch rewrites only rows
still in the old spelling, so a run that stops half-way is finished by running it again.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

BATCH = 5000

_UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_CANCEL = "v.kind = 'a2a_state' AND v.detail->>'action' = 'cancel'"

# One batch: the next BATCH rows in primary-key order after the cursor (todo_activity_pkey, so
# the whole pass reads the table once), of which those in the old spelling are rewritten; it
# returns the batch's last key, the next cursor (no row: the pass is done). ``v`` is the row,
# ``t`` its todo, ``e`` the todo's endpoint.
_BATCH = """
WITH b AS (
    SELECT todo_id, seq FROM todo_activity
     WHERE (todo_id, seq) > (%(after_todo)s, %(after_seq)s)
     ORDER BY todo_id, seq
     LIMIT %(batch)s
), rewritten AS (
    UPDATE todo_activity v
       SET actor_ref = {value}
      FROM b, todos t, endpoints e
     WHERE v.todo_id = b.todo_id AND v.seq = b.seq AND t.id = v.todo_id
       AND e.id = t.endpoint_id AND v.actor_kind = 'endpoint' AND ({rows})
)
SELECT todo_id, seq FROM b ORDER BY todo_id DESC, seq DESC LIMIT 1
"""

FORWARD = _BATCH.format(
    # The requester's answers (a2a:<slug>) and cancels (endpoint:<uuid>), and the agents' rows
    # (their lease's owner).
    rows=f"v.actor_ref !~ '^(endpoint|requester):{_UUID}$'"
    f" OR (v.actor_ref ~ '^endpoint:{_UUID}$' AND {_CANCEL})",
    value=f"""CASE WHEN v.actor_ref LIKE 'a2a:%%' THEN 'requester:' || t.endpoint_id
                     WHEN v.actor_ref ~ '^endpoint:{_UUID}$' AND {_CANCEL}
                     THEN 'requester:' || substr(v.actor_ref, 10)
                     ELSE 'endpoint:' || t.endpoint_id END""",
)

REVERSE = _BATCH.format(
    rows=f"v.actor_ref ~ '^(endpoint|requester):{_UUID}$'",
    # An agent's row gets its attempt's lease label back; a row naming no stored attempt keeps
    # the new spelling (the label is nowhere else).
    value=f"""CASE WHEN v.actor_ref LIKE 'requester:%%' AND {_CANCEL}
                     THEN 'endpoint:' || substr(v.actor_ref, 11)
                     WHEN v.actor_ref LIKE 'requester:%%' THEN 'a2a:' || e.slug
                     ELSE COALESCE((SELECT left(a.owner, 128) FROM todo_attempts a
                                     WHERE a.todo_id = v.todo_id AND a.seq = v.attempt_seq),
                                   v.actor_ref) END""",
)

# The attempts' leases, a batch as the activity's (todo_attempts_pkey); ``a`` is the attempt,
# ``e`` the endpoint that claimed it.
_ATTEMPTS = """
WITH b AS (
    SELECT todo_id, seq FROM todo_attempts
     WHERE (todo_id, seq) > (%(after_todo)s, %(after_seq)s)
     ORDER BY todo_id, seq
     LIMIT %(batch)s
), rewritten AS (
    UPDATE todo_attempts a
       SET owner = {new}
      FROM b, endpoints e
     WHERE a.todo_id = b.todo_id AND a.seq = b.seq AND a.claimer_kind = 'endpoint'
       AND e.id = a.claimer_endpoint_id AND a.owner = {old}
)
SELECT todo_id, seq FROM b ORDER BY todo_id DESC, seq DESC LIMIT 1
"""
_BY_SLUG, _BY_ID = "'endpoint:' || e.slug", "'endpoint:' || e.id"

# The todos' leases: only claimed todos have one, so no batches.
_LEASES = """
UPDATE todos t SET owner = {new}
  FROM endpoints e
 WHERE e.id = t.endpoint_id AND t.owner = {old};
"""

FORWARD_SMALL = (
    _LEASES.format(new=_BY_ID, old=_BY_SLUG)
    + """
UPDATE queue_pauses SET paused_by = 'command:queue'
 WHERE paused_by_kind = 'system' AND paused_by = 'manage.py';
UPDATE queue_pauses SET resumed_by = 'command:queue'
 WHERE resumed_by_kind = 'system' AND resumed_by = 'manage.py';
UPDATE todos t
   SET input_request = jsonb_set(t.input_request, '{response,from}', to_jsonb('human:' || h.id))
  FROM humans h
 WHERE t.input_request #>> '{response,from}' LIKE 'human:%'
   AND h.username = substr(t.input_request #>> '{response,from}', 7);
UPDATE todos t
   SET input_request = jsonb_set(t.input_request, '{response,from}',
                                 to_jsonb('requester:' || t.endpoint_id))
 WHERE t.input_request #>> '{response,from}' = 'requester';
"""
)

REVERSE_SMALL = (
    _LEASES.format(new=_BY_SLUG, old=_BY_ID)
    + """
UPDATE queue_pauses SET paused_by = 'manage.py'
 WHERE paused_by_kind = 'system' AND paused_by = 'command:queue';
UPDATE queue_pauses SET resumed_by = 'manage.py'
 WHERE resumed_by_kind = 'system' AND resumed_by = 'command:queue';
UPDATE todos t
   SET input_request = jsonb_set(t.input_request, '{response,from}',
                                 to_jsonb('human:' || h.username))
  FROM humans h
 WHERE t.input_request #>> '{response,from}' ~ '^human:[1-9][0-9]{0,17}$'
   AND h.id = substr(t.input_request #>> '{response,from}', 7)::bigint;
UPDATE todos t
   SET input_request = jsonb_set(t.input_request, '{response,from}', '"requester"')
 WHERE t.input_request #>> '{response,from}' ~ '^requester:';
"""
)


def _run(passes: list[str], small: str, schema_editor: Any) -> None:
    with schema_editor.connection.cursor() as cur:
        for batch in passes:
            after: tuple[str, int] | None = ("", -1)
            while after is not None:
                cur.execute(batch, {"after_todo": after[0], "after_seq": after[1], "batch": BATCH})
                after = cur.fetchone()
        for statement in filter(str.strip, small.split(";")):
            cur.execute(statement)


def forward(apps: Any, schema_editor: Any) -> None:
    _run([FORWARD, _ATTEMPTS.format(new=_BY_ID, old=_BY_SLUG)], FORWARD_SMALL, schema_editor)


def reverse(apps: Any, schema_editor: Any) -> None:
    # The attempts' leases first: an agent's activity row takes its attempt's label back.
    _run([_ATTEMPTS.format(new=_BY_SLUG, old=_BY_ID), REVERSE], REVERSE_SMALL, schema_editor)


class Migration(migrations.Migration):
    # Each batch commits on its own: no long lock on a large todo_activity.
    atomic = False

    dependencies = [
        ("activity", "0001_todo_activity"),
        ("todos", "0014_todo_search_table"),
        ("attempts", "0004_endpoint_ended"),
        ("switchboard", "0004_endpoint_push_secret"),
    ]

    operations = [migrations.RunPython(forward, reverse, elidable=False)]
