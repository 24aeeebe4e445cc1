"""The Board's team pages: the human's teams, creating one, a team's members and what it owns,
adding (an existing operator, by username), re-roling and removing members.

A team's page is its members' only: anyone else gets the same 404 as for an unknown name. Its
changes are its admins' (a member is told so, nothing changed); removing a member asks first,
saying what they lose. Every write goes through ``switchboard.teams``, whose refusals (a bad or
taken name, a human already in the team, the last admin) are shown by their own words, before
any question. Moving an endpoint into a team is on the endpoint's page
(``switchboard/endpoint_views.py``).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from alerts.models import AlertChannel
from switchboard import teams
from switchboard.lib.guards import BoardRequest, confirmed, login_required
from switchboard.lib.notfound import A_MEMBER, NotFound
from switchboard.models import Endpoint, Human, Team, TeamMember, TeamRole
from switchboard.scope import administers, teams_of
from todos.models import Source


def _posted(request: BoardRequest, key: str) -> str:
    """A posted name (on a GET, the query's), stripped; "" for one no name can be (a NUL, or
    longer than any name), so it is looked up as nothing and refused as unknown."""
    data = request.POST if request.method == "POST" else request.GET
    value = data.get(key, "").strip()
    return "" if "\x00" in value or len(value) > 150 else value


def _my_team(request: BoardRequest, name: str) -> Team:
    """The team ``name`` if the human is a member; 404 otherwise (unknown and foreign alike)."""
    team = Team.objects.filter(name=name, pk__in=teams_of(request.user.id)).first()
    if team is None:
        raise NotFound("Team", name, section="teams", why=A_MEMBER)
    return team


@login_required
@require_http_methods(["GET", "POST"])
def team_list(request: BoardRequest) -> HttpResponse:
    """The human's teams, and the form that creates one (its creator becomes its admin)."""
    name = ""
    if request.method == "POST":
        name = request.POST.get("name", "").strip()[:200]
        try:
            team = teams.create_team(name, request.user)
        except teams.TeamRefused as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Created team {team.name}; you are its admin.")
            return redirect("team_detail", name=team.name)
    memberships = (
        TeamMember.objects.filter(human_id=request.user.id)
        .select_related("team")
        .annotate(members=Count("team__memberships"))
        .order_by("team__name")
    )
    return render(
        request,
        "teams/team_list.html",
        {"section": "teams", "memberships": memberships, "name": name},
    )


@login_required
@require_GET
def team_detail(request: BoardRequest, name: str) -> HttpResponse:
    team = _my_team(request, name)
    members = (
        TeamMember.objects.filter(team=team).select_related("human").order_by("human__username")
    )
    return render(
        request,
        "teams/team_detail.html",
        {
            "section": "teams",
            "team": team,
            "members": members,
            "is_admin": administers(request.user.id, team),
            "endpoints": Endpoint.objects.filter(team=team).only("slug", "name", "revoked_at"),
            "sources": Source.objects.filter(team=team).only("slug", "name"),
            "roles": TeamRole.choices,
        },
    )


def _admin_only(request: BoardRequest, team: Team) -> bool:
    if administers(request.user.id, team):
        return True
    messages.error(request, f"Only an admin of team {team.name} manages its members.")
    return False


@login_required
@require_POST
def team_add(request: BoardRequest, name: str) -> HttpResponse:
    """Add an existing operator by username, as a member or an admin."""
    team = _my_team(request, name)
    if _admin_only(request, team):
        username = _posted(request, "username")
        human = Human.objects.filter(username=username, is_active=True).first()
        if human is None:
            messages.error(request, f"No operator named {username!r}.")
        else:
            try:
                member = teams.add_member(team, human, admin=request.POST.get("role") == "admin")
            except teams.TeamRefused as exc:
                messages.error(request, exc.message)
            else:
                messages.success(request, f"Added {human.username} as {member.role}.")
    return redirect("team_detail", name=team.name)


def _member_human(team: Team, request: BoardRequest) -> Human | None:
    return Human.objects.filter(
        username=_posted(request, "username"), memberships__team=team
    ).first()


@login_required
@require_http_methods(["GET", "POST"])
def team_remove(request: BoardRequest, name: str) -> HttpResponse:
    """Ask first; then remove a member. A GET, or a POST without ``confirm=yes`` (the members
    table's "Remove…"), is refused as the removal would be, or says what the member loses
    access to: nothing of the team's comes back to them until an admin adds them again."""
    team = _my_team(request, name)
    if _admin_only(request, team):
        human = _member_human(team, request)
        try:
            if human is None:
                raise teams.TeamRefused("not_member", "No such member.")
            if not (request.method == "POST" and confirmed(request)):
                member = teams.check_remove(team, human)
                return render(
                    request, "teams/team_remove.html", _remove_question(request, team, member)
                )
            teams.remove_member(team, human)
        except teams.TeamRefused as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Removed {human.username} from team {team.name}.")
            if human.pk == request.user.id:
                return redirect("teams")
    return redirect("team_detail", name=team.name)


def _remove_question(request: BoardRequest, team: Team, member: TeamMember) -> dict[str, Any]:
    """What removing ``member`` takes from them: everything the team owns (a thing is owned by
    one team or one human, so none of it stays theirs some other way)."""
    return {
        "section": "teams",
        "team": team,
        "member": member,
        "yourself": member.human_id == request.user.id,
        "endpoints": list(Endpoint.objects.filter(team=team).order_by("slug")),
        "sources": list(Source.objects.filter(team=team).order_by("slug")),
        "channels": AlertChannel.objects.filter(team=team).count(),
    }


@login_required
@require_POST
def team_role(request: BoardRequest, name: str) -> HttpResponse:
    team = _my_team(request, name)
    if _admin_only(request, team):
        human = _member_human(team, request)
        try:
            if human is None:
                raise teams.TeamRefused("not_member", "No such member.")
            member = teams.set_role(team, human, admin=request.POST.get("role") == "admin")
        except teams.TeamRefused as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"{human.username} is now {member.role}.")
    return redirect("team_detail", name=team.name)
