"""The Board's shell: login and logout, the rail, the static assets."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.base import Personas

pytestmark = pytest.mark.django_db

PAGES = ["todo_list", "overview", "activity", "endpoint_list", "endpoint_new", "sources"]


@pytest.mark.parametrize("name", PAGES)
def test_every_page_sends_anonymous_visitors_to_the_board_login(client: Client, name: str) -> None:
    response = client.get(reverse(name))

    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


def test_login_page_renders_without_anything_from_another_server(client: Client) -> None:
    response = client.get(reverse("login"))

    body = response.content.decode()
    assert response.status_code == 200
    assert 'name="username"' in body and 'name="password"' in body
    assert "/static/board.css" in body
    assert "/static/django_htmx/htmx-2.min.js" in body
    assert "http://" not in body and "https://" not in body and "//cdn" not in body


def test_logging_in_lands_on_the_todo_list(client: Client, personas: Personas) -> None:
    response = client.post(
        reverse("login"),
        {"username": "alice", "password": "correct horse battery staple"},
        follow=True,
    )

    assert response.redirect_chain[-1][0] == "/"
    assert b"<h1>Todos</h1>" in response.content


def test_a_wrong_password_is_refused_on_the_login_page(client: Client, personas: Personas) -> None:
    response = client.post(reverse("login"), {"username": "alice", "password": "nope"})

    assert response.status_code == 200
    assert b'role="alert"' in response.content
    assert "_auth_user_id" not in client.session


def test_logout_is_a_post_and_returns_to_the_login(alice_client: Client) -> None:
    response = alice_client.post(reverse("logout"))

    assert response.status_code == 302 and response["Location"] == reverse("login")
    assert alice_client.get(reverse("todo_list")).status_code == 302


@pytest.mark.parametrize("name", PAGES)
def test_every_page_renders_with_the_rail(alice_client: Client, name: str) -> None:
    response = alice_client.get(reverse(name))

    body = response.content.decode()
    assert response.status_code == 200
    for label in ("Todos", "Activity", "Endpoints", "Sources"):
        assert f">{label}</a>" in body
    assert ">Admin</a>" not in body  # alice is not staff


def test_staff_see_the_admin_in_the_rail(client: Client, personas: Personas) -> None:
    client.force_login(personas.admin)

    assert b">Admin</a>" in client.get(reverse("todo_list")).content


def test_the_activity_item_opens_the_feed(alice_client: Client) -> None:
    body = alice_client.get(reverse("activity")).content.decode()

    assert "<h1>Activity</h1>" in body and "Nothing has happened on your todos yet." in body


def test_the_stylesheet_and_htmx_are_served_here(alice_client: Client) -> None:
    css = alice_client.get("/static/board.css")
    js = alice_client.get("/static/django_htmx/htmx-2.min.js")
    ours = alice_client.get("/static/board.js")

    assert css.status_code == 200 and b"prefers-color-scheme: dark" in b"".join(css)
    assert js.status_code == 200 and ours.status_code == 200


def test_an_htmx_request_without_a_session_sends_the_whole_page_to_the_login(
    client: Client, personas: Personas
) -> None:
    response = client.get(
        reverse("todo_detail", args=["td_aaaaaaaaaaaaaaaaaaaa"]),
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL="http://testserver/?state=failed",
    )

    assert response.status_code == 200
    assert response["HX-Redirect"] == "/login/?next=%2F%3Fstate%3Dfailed"
    assert response.content == b""
