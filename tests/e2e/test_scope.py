"""Owner scope in a real browser: bob's browser cannot see alice's todos."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.base import Personas
from tests.e2e.conftest import Board
from tests.reach import new_todo

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.e2e]


def test_bobs_browser_gets_404_for_alices_todo(
    open_board: Callable[..., Board], personas: Personas
) -> None:
    todo = new_todo(personas.endpoint_a.id, "work", title="Alice's secret work")
    alice, bob = open_board(), open_board()
    alice.login("alice")
    bob.login("bob")

    response = alice.goto(f"/todos/{todo.id}")
    assert response.status == 200
    expect(alice.page.get_by_role("heading", name="Alice's secret work")).to_be_visible()

    response = bob.goto(f"/todos/{todo.id}")
    assert response.status == 404
    expect(bob.page.get_by_role("alert")).to_contain_text("was not found")
    expect(bob.page.get_by_text("Alice's secret work")).to_have_count(0)
    bob.goto("/")
    expect(bob.page.locator("#todo-rows")).to_contain_text("No todos match.")
    response = bob.goto(f"/endpoints/{personas.endpoint_a.slug}")
    assert response.status == 404


def test_a_team_members_browser_sees_the_teams_todo_and_an_outsiders_does_not(
    open_board: Callable[..., Board], personas: Personas
) -> None:
    from switchboard import credentials, teams
    from tests.factories import HumanFactory

    HumanFactory(username="carol")
    team = teams.create_team("ops", personas.alice)
    teams.add_member(team, HumanFactory._meta.model.objects.get(username="carol"))
    endpoint, _, _ = credentials.create_endpoint(
        None, team=team, name="Ops agent", slug="agent-t", verbs=[]
    )
    todo = new_todo(endpoint.id, "work", title="The team's work")
    carol, bob = open_board(), open_board()
    carol.login("carol")
    bob.login("bob")

    expect(carol.page.locator("#todo-rows")).to_contain_text("The team's work")
    assert carol.goto(f"/todos/{todo.id}").status == 200
    assert carol.goto("/teams/ops").status == 200
    expect(carol.page.locator("#members")).to_contain_text("alice")

    expect(bob.page.locator("#todo-rows")).to_contain_text("No todos match.")
    assert bob.goto(f"/todos/{todo.id}").status == 404
    assert bob.goto("/teams/ops").status == 404
