"""The Board's search: ``todos_search_idx``, a trigram index over a todo's id, title and the
first text values of its payload (docs/decisions/0019-todo-search.md).

``todo_search_text(id, title, payload)`` is the one definition of what a search reads: the id,
the title, and the payload's string values (every depth, in jsonb's stored key order) joined by
spaces, cut at ``SEARCH_TEXT_CHARS`` characters, so a huge payload costs the index no more than
a small one. The statement (todos/sql/todo_page.sql, through ``todos.queries``) calls the same
function, which is how PostgreSQL matches the index. It is IMMUTABLE because every piece is:
``jsonb_path_query`` (not its ``_tz`` form), ``string_agg``, ``left`` and ``||``. Its COST
(1000, ten times a function's default) says what it is: a walk of the whole payload, about 60 µs
for a 3 KB one; at the default the planner reads a human's todos one by one through
todos_board_idx and computes the text of each rather than asking the index.

pg_trgm is a trusted extension (PostgreSQL 13 and later), so the database's owner can create
it; the reverse drops what this created, index, function and extension, in that order.

Not in one transaction (``atomic = False``): the index is built ``CONCURRENTLY``, so claims and
intake go on while it builds. A run that fails part way leaves an ``INVALID`` index behind; drop
it and run again (``IF NOT EXISTS`` / ``IF EXISTS``).
"""

from django.db import migrations

SEARCH_TEXT_CHARS = 1000

CREATE_FUNCTION = f"""
CREATE OR REPLACE FUNCTION todo_search_text(id text, title text, payload jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE COST 1000
RETURN left(
    id || ' ' || coalesce(title, '') || ' ' || coalesce((
        SELECT string_agg(v #>> '{{}}', ' ')
          FROM jsonb_path_query(payload, 'strict $.** ? (@.type() == "string")') AS v
    ), ''),
    {SEARCH_TEXT_CHARS}
)
"""


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("todos", "0012_overview_rollups")]

    operations = [
        migrations.RunSQL(
            "CREATE EXTENSION IF NOT EXISTS pg_trgm", "DROP EXTENSION IF EXISTS pg_trgm"
        ),
        migrations.RunSQL(
            CREATE_FUNCTION, "DROP FUNCTION IF EXISTS todo_search_text(text, text, jsonb)"
        ),
        migrations.RunSQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS todos_search_idx ON todos"
            " USING gin (todo_search_text(id, title, payload) gin_trgm_ops)",
            "DROP INDEX CONCURRENTLY IF EXISTS todos_search_idx",
        ),
    ]
