"""A page whose database connection fails mid-request answers 503 with Retry-After, not 500
(switchboard/views.py ``server_error``); any other failure stays a 500 without a traceback."""

from __future__ import annotations

import pytest
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

from switchboard import urls


def _connection_ended(request: HttpRequest) -> HttpResponse:
    # The server ends this very session, as a restart ends every open one: the query fails
    # with the connection (or, should the answer arrive first, the next one does).
    with connection.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        cur.execute("SELECT 1")
    return HttpResponse("unreachable")


def _bug(request: HttpRequest) -> HttpResponse:
    raise ValueError("a bug, not an outage")


def _fine(request: HttpRequest) -> HttpResponse:
    with connection.cursor() as cur:
        cur.execute("SELECT 41 + 1")
        (answer,) = cur.fetchone()
    return HttpResponse(str(answer))


handler500 = urls.handler500
urlpatterns = [
    path("ended/", _connection_ended),
    path("bug/", _bug),
    path("fine/", _fine),
]


def test_the_board_uses_the_handler() -> None:
    assert urls.handler500 == "switchboard.views.server_error"


@pytest.mark.urls("tests.switchboard.test_server_error")
@pytest.mark.django_db(transaction=True)
def test_a_lost_database_connection_is_a_503_to_retry_and_the_next_request_reconnects() -> None:
    client = Client(raise_request_exception=False)

    response = client.get("/ended/")

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert b"database is unavailable" in response.content
    assert client.get("/fine/").content == b"42"


@pytest.mark.urls("tests.switchboard.test_server_error")
@pytest.mark.django_db
def test_any_other_failure_is_a_500_without_details() -> None:
    response = Client(raise_request_exception=False).get("/bug/")

    assert response.status_code == 500
    assert b"Server error" in response.content
    assert b"ValueError" not in response.content
    assert "Retry-After" not in response


@pytest.mark.urls("tests.switchboard.test_server_error")
@pytest.mark.django_db(transaction=True)
def test_a_client_that_takes_no_html_gets_json() -> None:
    client = Client(raise_request_exception=False)

    unavailable = client.get("/ended/", headers={"Accept": "application/json"})
    bug = client.get("/bug/", headers={"Accept": "application/json"})

    assert unavailable.status_code == 503 and unavailable["Retry-After"] == "5"
    assert unavailable.json()["error"] == "unavailable"
    assert bug.status_code == 500 and bug.json() == {
        "error": "server_error",
        "detail": "an error on our side",
    }
