"""The race harness: actors in threads, each on its own Django connection, and raw connections.

A race test commits for real (``pytest.mark.django_db(transaction=True)``): a row another
connection must see, or a lock another connection must wait on, cannot live in the test's
rolled-back transaction.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.db import connection
from psycopg.conninfo import make_conninfo


def raw_connection(*, autocommit: bool = False) -> psycopg.Connection[Any]:
    """A psycopg connection of its own to the test database (not Django's)."""
    s = connection.settings_dict
    conninfo = make_conninfo(
        dbname=s["NAME"],
        host=s["HOST"] or None,
        port=str(s["PORT"]) if s["PORT"] else None,
        user=s["USER"] or None,
        password=s["PASSWORD"] or None,
    )
    return psycopg.connect(conninfo, autocommit=autocommit)
