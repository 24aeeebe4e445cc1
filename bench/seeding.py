"""The benchmarks' todos: a settled endpoint's history, then the pending todos a run claims.

``bench/lifecycle.py`` and ``bench/mcp.py`` seed through ``seed``, so both measure the same rows
under the same statistics. The history matters to every plan that reads ``todo_attempts``: on
a table analyzed while empty, the planner's generic plans scan it whole for each claim's prior
attempts (the seq scan grows with every attempt the run opens), which no settled system does.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

# Seeding in one statement: ids are md5 hex with 0/1/8/9 mapped to w/x/y/z, which satisfies
# todos_id_check ('^td_[a-z2-7]{20}$') and is unique per (nonce, i). created_at is spread 1 ms
# apart so claim order is total. The payload and work order are sized like a webhook-made todo.
# With --priorities the pending todos spread over 21 priorities (-100..100, interleaved with their
# age), so each claim takes the head of the priority-ordered index among mixed rows.
SEED = """
INSERT INTO todos (id, endpoint_id, queue, title, payload, work_order, max_attempts,
                   created_at, updated_at, priority)
SELECT 'td_' || substr(translate(md5(%(nonce)s || ':' || i), '0189', 'wxyz'), 1, 20),
       %(endpoint_id)s, %(queue)s, 'bench todo ' || i,
       jsonb_build_object('n', i, 'repo', 'stump/switchboard', 'ref', 'refs/heads/main',
                          'check', 'ci/unit', 'detail', repeat('x', 200)),
       repeat('Fix the failing check, push, and report back. ', 4), 5,
       now() - (%(n)s - i) * interval '1 millisecond', now(),
       %(spread)s * (((i::bigint * 7919) %% 21) - 10) * 10
  FROM generate_series(1, %(n)s) AS i
"""

# A settled system's history, older than every pending todo: completed todos, each with its
# closed attempt (retention keeps 10,000 per endpoint by default). It gives the planner the
# statistics of a live system (most todos finished, most attempts closed) and the indexes their
# size, instead of a table that is nothing but pending rows.
SEED_HISTORY = """
WITH done AS (
    INSERT INTO todos (id, endpoint_id, queue, title, payload, work_order, state, attempt,
                       attempts_total, result, created_at, updated_at, finished_at)
    SELECT 'td_' || substr(translate(md5(%(nonce)s || ':h' || i), '0189', 'wxyz'), 1, 20),
           %(endpoint_id)s, %(queue)s, 'bench history ' || i,
           jsonb_build_object('n', i, 'repo', 'stump/switchboard', 'detail', repeat('x', 200)),
           repeat('Fix the failing check, push, and report back. ', 4), 'completed', 1, 1,
           '{"ok": true}', now() - interval '1 day' - i * interval '1 second',
           now() - interval '1 day', now() - interval '1 day'
      FROM generate_series(1, %(n)s) AS i
    RETURNING id, created_at
)
INSERT INTO todo_attempts (todo_id, endpoint_id, seq, attempt, claimer_kind, claimer_endpoint_id,
                           owner, claimant, claimed_at, last_heartbeat_at, lease_expires_at,
                           ended_at, outcome, disposition, summary)
SELECT id, %(endpoint_id)s, 1, 1, 'endpoint', %(endpoint_id)s, 'bench-history', 'bench/history',
       created_at, created_at + interval '1 minute', created_at + interval '5 minutes',
       created_at + interval '2 minutes', 'completed', 'done', 'done'
  FROM done
"""


def seed(
    admin: psycopg.Connection[Any],
    endpoint_id: uuid.UUID,
    queue: str,
    n: int,
    history: int,
    *,
    priorities: bool = False,
) -> None:
    """Replace every todo (and, by cascade, attempt) with ``history`` completed todos and ``n``
    fresh pending ones on ``queue`` (of mixed priorities when ``priorities``)."""
    # Both named: an ablation drops the FK through which CASCADE would reach todo_attempts.
    admin.execute("TRUNCATE todos, todo_attempts CASCADE")
    params = {"nonce": uuid.uuid4().hex, "endpoint_id": endpoint_id, "queue": queue}
    if history:
        admin.execute(SEED_HISTORY, {**params, "n": history})
    admin.execute(SEED, {**params, "n": n, "spread": 1 if priorities else 0})
    # Statistics and a visibility map as a settled table would have.
    admin.execute("VACUUM (ANALYZE) todos, todo_attempts")
