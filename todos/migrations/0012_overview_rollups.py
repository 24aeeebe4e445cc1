"""The Overview page's rollups (docs/decisions/0017-overview-rollups.md), kept by the sweeper
(``todos/overview.py``) and read by the Board's ``/overview/``:

- ``overview_minutes``: per endpoint, queue and minute, the attempts that ended completed and
  failed (reported, or died with their lease), histograms of their claim wait and run time, and
  the queue-depth sample the sweeper took last in that minute;
- ``overview_hours``: the same counts and histograms summed per hour, and the hour's highest
  depth samples, so the page's day reads 24 rows per queue, not 1,440;
- ``overview_marks``: one row, how far the minutes are computed (the high-water mark).

No models (only the SQL in ``todos/sql/overview_*.sql`` touches them), so ``endpoint_id`` is not
a foreign key, as in ``push_circuits``: Django's test flush truncates ``endpoints`` without these
tables, and a row of a deleted endpoint is harmless (the page reads through its endpoints).
A histogram is NULL when nothing was measured, else an int[] of ``todos.overview.BUCKETS``.
"""

from django.db import migrations

SQL = """
CREATE TABLE overview_minutes (
    endpoint_id        uuid NOT NULL,
    queue              text NOT NULL,
    minute             timestamptz NOT NULL,
    completed          int NOT NULL DEFAULT 0 CHECK (completed >= 0),
    failed             int NOT NULL DEFAULT 0 CHECK (failed >= 0),
    wait_hist          int[],
    run_hist           int[],
    sampled_at         timestamptz,
    pending            int NOT NULL DEFAULT 0 CHECK (pending >= 0),
    in_flight          int NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
    retry_due          int NOT NULL DEFAULT 0 CHECK (retry_due >= 0),
    dead               int NOT NULL DEFAULT 0 CHECK (dead >= 0),
    oldest_pending_at  timestamptz,
    -- Serves: the page's reads per endpoint (owner's endpoints, last hour or day), the upserts.
    PRIMARY KEY (endpoint_id, queue, minute)
);
-- Serves: the pruning by age, and the sample's "queues busy in the last day".
CREATE INDEX overview_minutes_minute_idx ON overview_minutes (minute);

CREATE TABLE overview_hours (
    endpoint_id  uuid NOT NULL,
    queue        text NOT NULL,
    hour         timestamptz NOT NULL,
    completed    int NOT NULL DEFAULT 0 CHECK (completed >= 0),
    failed       int NOT NULL DEFAULT 0 CHECK (failed >= 0),
    busy         boolean NOT NULL DEFAULT false,
    -- The highest depth samples of the hour (NULL when no sample was taken in it).
    pending_max    int,
    in_flight_max  int,
    wait_hist    int[],
    run_hist     int[],
    -- Serves: the page's day percentiles per endpoint, the upserts.
    PRIMARY KEY (endpoint_id, queue, hour)
);
-- Serves: the pruning by age, and the sample's "queues busy in the last day".
CREATE INDEX overview_hours_hour_idx ON overview_hours (hour);

CREATE TABLE overview_marks (
    id       boolean PRIMARY KEY DEFAULT true CHECK (id),
    through  timestamptz NOT NULL
);
"""

REVERSE = """
DROP TABLE overview_marks;
DROP TABLE overview_hours;
DROP TABLE overview_minutes;
"""


class Migration(migrations.Migration):
    dependencies = [("todos", "0011_queue_pause")]

    operations = [migrations.RunSQL(SQL, REVERSE)]
