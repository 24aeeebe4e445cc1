"""Logging in and out of the Board in a real browser."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import PASSWORD, Board, Demo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def test_an_operator_logs_in_after_a_wrong_password_and_logs_out(board: Board, demo: Demo) -> None:
    page = board.page
    board.goto("/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    board.shot("login")

    page.get_by_label("Username").fill("demo")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("alert")).to_contain_text("Please enter a correct username")

    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(board.live.url("/"))
    expect(page.get_by_role("heading", name="Todos", exact=True)).to_be_visible()
    rail = page.get_by_role("navigation", name="Board")
    expect(rail.get_by_role("link", name="Todos")).to_have_attribute("aria-current", "page")
    expect(rail).to_contain_text("demo")
    expect(rail.get_by_role("link", name="Admin")).to_be_visible()  # demo is staff

    page.get_by_role("button", name="Log out").click()
    expect(page).to_have_url(board.live.url("/login/"))
    board.goto("/endpoints/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/endpoints/$"))
