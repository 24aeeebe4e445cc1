"""todo_spans partitioned by day of ``received_at``, so span retention drops whole days.

docs/decisions/0040-span-partitions.md sets out the choice. In short:

- ``PARTITION BY RANGE (received_at)``, one partition per UTC day, named
  ``todo_spans_pYYYYMMDD``, and a DEFAULT partition, ``todo_spans_default``, that takes any row
  whose day has no partition: an insert never fails for lack of one. The sweeper's spans step
  (``otlp/partitions.py``) creates the coming days' partitions ahead and drops the days past
  ``span_retention_days``.
- The primary key is ``(todo_id, trace_id, span_id, received_at)``: a partitioned table's unique
  index must hold its partition key. ``received_at`` is now when a span was first stored: the
  store writes a re-sent span over its stored copy, found by key, keeping that copy's
  ``received_at`` (``otlp/sql/counts.sql``, ``store.sql``).
- Two functions, the one definition of a day's partition for this migration and the sweeper
  alike: ``sb_span_partition_add(day)`` creates it unless it exists (``CREATE TABLE … LIKE``, the
  day's rows moved out of the default partition, then ``ATTACH``, which locks the parent only
  SHARE UPDATE EXCLUSIVE: ingest and reads go on), ``sb_span_partition_drop(day)`` drops it.
  Both take a transaction-level advisory lock, so two sweepers (or a sweeper and this
  migration) never race on one name.

Forward: the table is locked, renamed out of the way, the partitioned table created with the
same columns, CHECKs (named as before), foreign key and index, a partition made for every day
the stored spans were received on and for today and the next two days, then every row copied
in and the old table dropped. It holds ACCESS EXCLUSIVE on the spans for the whole copy: ingest
waits (its requests time out and exporters retry) for as long as copying the table takes.
Reverse: the same back into one plain table, keeping the newest copy should a key be stored
twice.
"""

import django.db.models
from django.db import migrations

# The columns as otlp/migrations/0001_spans.py and 0004_usage_and_prices.py made them, in their
# order, with the CHECKs under the names PostgreSQL gave them there.
COLUMNS = """
    todo_id            text           NOT NULL,
    trace_id           bytea          NOT NULL,
    span_id            bytea          NOT NULL,
    parent_span_id     bytea,
    attempt_seq        int,
    name               text           NOT NULL,
    kind               text           NOT NULL,
    category           text           NOT NULL,
    tool               text,
    status_code        text           NOT NULL DEFAULT 'unset',
    status_message     text,
    service_name       text,
    start_at           timestamptz    NOT NULL,
    end_at             timestamptz    NOT NULL,
    attributes         jsonb          NOT NULL DEFAULT '{}',
    truncated          boolean        NOT NULL DEFAULT false,
    received_at        timestamptz    NOT NULL DEFAULT now(),
    cache_read_tokens  bigint,
    cache_write_tokens bigint,
    cost_usd           numeric(24,12),
    input_tokens       bigint,
    model              text,
    output_tokens      bigint,
    reasoning_tokens   bigint,
    CONSTRAINT todo_spans_todo_id_fkey FOREIGN KEY (todo_id) REFERENCES todos(id) ON DELETE CASCADE,
    CONSTRAINT todo_spans_trace_id_check CHECK (octet_length(trace_id) = 16),
    CONSTRAINT todo_spans_span_id_check CHECK (octet_length(span_id) = 8),
    CONSTRAINT todo_spans_parent_span_id_check CHECK (octet_length(parent_span_id) = 8),
    CONSTRAINT todo_spans_name_check CHECK (octet_length(name) <= 256),
    CONSTRAINT todo_spans_category_check CHECK (octet_length(category) BETWEEN 1 AND 64),
    CONSTRAINT todo_spans_tool_check CHECK (octet_length(tool) <= 128),
    CONSTRAINT todo_spans_status_code_check CHECK (status_code IN ('unset','ok','error')),
    CONSTRAINT todo_spans_status_message_check CHECK (octet_length(status_message) <= 512),
    CONSTRAINT todo_spans_service_name_check CHECK (octet_length(service_name) <= 128),
    CONSTRAINT todo_spans_check CHECK (end_at >= start_at),
    CONSTRAINT todo_spans_attributes_check CHECK (octet_length(attributes::text) <= 16384)"""

NAMES = (
    "todo_id, trace_id, span_id, parent_span_id, attempt_seq, name, kind, category, tool,"
    " status_code, status_message, service_name, start_at, end_at, attributes, truncated,"
    " received_at, cache_read_tokens, cache_write_tokens, cost_usd, input_tokens, model,"
    " output_tokens, reasoning_tokens"
)

# The index serves what it served before: an attempt's spans in start order for its waterfall,
# and the receiver's span counts against the caps (otlp/sql/spans_for_todo.sql, counts.sql).
INDEX = "CREATE INDEX idx_todo_spans_attempt ON todo_spans (todo_id, attempt_seq, start_at);"

FUNCTIONS = """
-- A day's partition of todo_spans ([day, day + 1) in UTC), unless it exists; true if made.
-- Made standalone, then attached: ATTACH locks todo_spans SHARE UPDATE EXCLUSIVE (ingest and
-- reads go on), where CREATE TABLE … PARTITION OF would lock it ACCESS EXCLUSIVE. Rows the
-- DEFAULT partition took for that day (no partition held it when they came) move into it
-- first: ATTACH refuses while the default holds any.
CREATE FUNCTION sb_span_partition_add(day date) RETURNS boolean
    LANGUAGE plpgsql AS $$
DECLARE
    part text := 'todo_spans_p' || to_char(day, 'YYYYMMDD');
    low timestamptz := day::timestamp AT TIME ZONE 'UTC';
    high timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
BEGIN
    PERFORM pg_advisory_xact_lock(5964290);  -- 0x5B_0202: adding or dropping a span partition
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE todo_spans INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                   part);
    LOCK TABLE todo_spans_default IN ACCESS EXCLUSIVE MODE;
    EXECUTE format('WITH moved AS (DELETE FROM todo_spans_default'
                   ' WHERE received_at >= $1 AND received_at < $2 RETURNING *)'
                   ' INSERT INTO %I SELECT * FROM moved', part) USING low, high;
    EXECUTE format('ALTER TABLE todo_spans ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                   part, low, high);
    RETURN true;
END $$;

-- Drop a day's partition of todo_spans with its rows; true if there was one. Dropped while
-- attached: DETACH would first turn the partition's foreign key into one of its own (new
-- triggers on todos), and dropping it then locks todos ACCESS EXCLUSIVE.
CREATE FUNCTION sb_span_partition_drop(day date) RETURNS boolean
    LANGUAGE plpgsql AS $$
DECLARE
    part text := 'todo_spans_p' || to_char(day, 'YYYYMMDD');
BEGIN
    PERFORM pg_advisory_xact_lock(5964290);
    IF NOT EXISTS (SELECT 1 FROM pg_inherits
                    WHERE inhrelid = to_regclass(part) AND inhparent = 'todo_spans'::regclass) THEN
        RETURN false;
    END IF;
    EXECUTE format('DROP TABLE %I', part);
    RETURN true;
END $$;
"""

FORWARD = f"""
LOCK TABLE todo_spans IN ACCESS EXCLUSIVE MODE;
ALTER TABLE todo_spans RENAME TO todo_spans_unpartitioned;
ALTER INDEX todo_spans_pkey RENAME TO todo_spans_unpartitioned_pkey;
ALTER INDEX idx_todo_spans_attempt RENAME TO idx_todo_spans_unpartitioned_attempt;

CREATE TABLE todo_spans ({COLUMNS},
    CONSTRAINT todo_spans_pkey PRIMARY KEY (todo_id, trace_id, span_id, received_at)
) PARTITION BY RANGE (received_at);
{INDEX}
CREATE TABLE todo_spans_default PARTITION OF todo_spans DEFAULT;
{FUNCTIONS}
SELECT sb_span_partition_add(d)
  FROM (SELECT DISTINCT (received_at AT TIME ZONE 'UTC')::date AS d FROM todo_spans_unpartitioned
        UNION
        SELECT (now() AT TIME ZONE 'UTC')::date + i FROM generate_series(0, 2) AS i) AS days
 ORDER BY d;
INSERT INTO todo_spans ({NAMES}) SELECT {NAMES} FROM todo_spans_unpartitioned;
DROP TABLE todo_spans_unpartitioned;
"""

REVERSE = f"""
LOCK TABLE todo_spans IN ACCESS EXCLUSIVE MODE;
ALTER TABLE todo_spans RENAME TO todo_spans_partitioned;
ALTER INDEX todo_spans_pkey RENAME TO todo_spans_partitioned_pkey;
ALTER INDEX idx_todo_spans_attempt RENAME TO idx_todo_spans_partitioned_attempt;

CREATE TABLE todo_spans ({COLUMNS},
    CONSTRAINT todo_spans_pkey PRIMARY KEY (todo_id, trace_id, span_id)
);
{INDEX}
INSERT INTO todo_spans ({NAMES})
SELECT DISTINCT ON (todo_id, trace_id, span_id) {NAMES}
  FROM todo_spans_partitioned
 ORDER BY todo_id, trace_id, span_id, received_at DESC;
DROP TABLE todo_spans_partitioned;
DROP FUNCTION sb_span_partition_drop(date);
DROP FUNCTION sb_span_partition_add(date);
"""


class Migration(migrations.Migration):
    dependencies = [("otlp", "0005_default_prices"), ("attempts", "0008_spans_stored")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[
                migrations.AlterField(
                    model_name="todospan",
                    name="pk",
                    field=django.db.models.CompositePrimaryKey(
                        "todo",
                        "trace_id",
                        "span_id",
                        "received_at",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
            ],
        )
    ]
