"""The Board's search text in a table of its own (docs/decisions/0019-todo-search.md).

- ``todo_search``: one row per todo, its ``todo_search_text(id, title, payload)`` (the one
  definition of the text, migrations/0013), written once by the statement that creates the todo
  (``todos/sql/create.sql``): a todo's id, title and payload never change after that. A row goes
  with its todo (ON DELETE CASCADE: retention), through this table's primary key.
- ``todo_search_text_idx``: GIN ``gin_trgm_ops`` over ``text``, what a search reads.
- ``todos_search_idx`` is dropped. As an expression index on ``todos`` it made every update that
  is not HOT (a claim, a report: they change ``state``) compute the text again and insert its
  trigrams; on a table of its own the index costs intake alone.

A model (``todos.models.TodoSearch``, a read mirror) for the foreign key: Django's test flush
truncates the models' tables together, and PostgreSQL refuses to truncate ``todos`` while a
table outside that list references it.

Not in one transaction (``atomic = False``), as migrations/0013: the indexes are built and
dropped ``CONCURRENTLY``, so claims and intake go on. The backfill is one statement (about 60 µs
a todo, a minute for a million; it reads ``todos`` under a lock that stops no claim or insert)
and skips the todos that have their row, so it can be run again; a run that fails part way
is run again as it is (``IF NOT EXISTS`` / ``IF EXISTS``, as 0013). An upgrade stops the old code
first (docs/guides/operations.md, "Upgrading"): a process still running the previous
``create.sql`` would make todos without a row, which no search finds until ``BACKFILL`` is run
again.
"""

import django.db.models.deletion
from django.db import migrations, models

CREATE_TABLE = """
CREATE TABLE IF NOT EXISTS todo_search (
    -- Serves: the join to todos and the cascade of a todo's delete (retention).
    todo_id  text PRIMARY KEY REFERENCES todos(id) ON DELETE CASCADE,
    text     text NOT NULL
)
"""

BACKFILL = """
INSERT INTO todo_search (todo_id, text)
SELECT t.id, todo_search_text(t.id, t.title, t.payload)
  FROM todos t
 WHERE NOT EXISTS (SELECT FROM todo_search s WHERE s.todo_id = t.id)
"""

# Serves: the Board's search, text ILIKE '%…%' (todos/sql/todo_search.sql, TodoFilters).
CREATE_INDEX = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS todo_search_text_idx ON todo_search"
    " USING gin (text gin_trgm_ops)"
)

OLD_INDEX = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS todos_search_idx ON todos"
    " USING gin (todo_search_text(id, title, payload) gin_trgm_ops)"
)


class Migration(migrations.Migration):
    atomic = False
    dependencies = [("todos", "0013_todo_search")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(CREATE_TABLE, "DROP TABLE IF EXISTS todo_search")
            ],
            state_operations=[
                migrations.CreateModel(
                    name="TodoSearch",
                    fields=[
                        (
                            "todo",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                primary_key=True,
                                related_name="search",
                                serialize=False,
                                to="todos.todo",
                            ),
                        ),
                        ("text", models.TextField()),
                    ],
                    options={"db_table": "todo_search"},
                ),
            ],
        ),
        migrations.RunSQL(BACKFILL, migrations.RunSQL.noop),
        migrations.RunSQL(CREATE_INDEX, "DROP INDEX CONCURRENTLY IF EXISTS todo_search_text_idx"),
        migrations.RunSQL("DROP INDEX CONCURRENTLY IF EXISTS todos_search_idx", OLD_INDEX),
    ]
