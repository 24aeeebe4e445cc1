from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.test import Client
from pytest_django import DjangoDbBlocker


@pytest.mark.django_db
def test_healthz_answers_200_when_the_database_answers(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


class Outage:
    """Points Django's connection at a closed port until ``end()`` (or the test's end)."""

    def __init__(self) -> None:
        self._saved = {key: connection.settings_dict[key] for key in ("HOST", "PORT")}
        connection.close()
        connection.settings_dict.update(HOST="127.0.0.1", PORT="1")

    def end(self) -> None:
        connection.close()
        connection.settings_dict.update(self._saved)


@pytest.fixture
def outage(django_db_setup: None, django_db_blocker: DjangoDbBlocker) -> Iterator[Outage]:
    # Not the `db` fixture: its test transaction cannot survive closing the connection. Nothing
    # here writes, so the test database needs no cleanup; the connection settings are restored.
    with django_db_blocker.unblock():
        outage = Outage()
        try:
            yield outage
        finally:
            outage.end()


def test_healthz_answers_503_in_json_when_the_database_is_unreachable(
    client: Client, outage: Outage
) -> None:
    response = client.get("/healthz")

    assert response.status_code == 503
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"status": "unavailable", "database": "OperationalError"}
    assert "no-cache" in response["Cache-Control"]


def test_healthz_recovers_when_the_database_comes_back(client: Client, outage: Outage) -> None:
    assert client.get("/healthz").status_code == 503

    outage.end()

    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


@pytest.mark.django_db
def test_healthz_answers_only_get(client: Client) -> None:
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_readyz_answers_200_when_every_migration_is_applied(client: Client) -> None:
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "migrations": "ok"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_readyz_answers_503_while_a_migration_is_unapplied_and_healthz_stays_200(
    client: Client,
) -> None:
    # Unrecord the newest applied migration (the test's transaction puts it back): the
    # database now lacks a migration the code on disk has, as during an upgrade.
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM django_migrations WHERE id = (SELECT max(id) FROM django_migrations)"
        )

    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "database": "ok",
        "migrations": "pending",
        "pending": 1,
    }
    assert client.get("/healthz").status_code == 200


def test_readyz_answers_503_when_the_database_is_unreachable(
    client: Client, outage: Outage
) -> None:
    response = client.get("/readyz")

    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "OperationalError"}
