"""Teams and their members: the only module that writes them (docs/decisions/0034-teams.md),
and the check every move of an endpoint or a source into a team passes.

The Board, the admin and ``manage.py team`` call these functions, so a refusal reads the same
on every screen. Each refusal is a ``TeamRefused`` with a ``code`` naming the reason, raised
before anything is written: a bad or taken name, a human already in the team, removing the
last admin, or a mover who does not administer the team or manage the endpoint.

A team always keeps an admin: creating one makes its creator the first, and the last cannot be
removed or demoted (the team's row is locked while admins are counted, so two removals racing
cannot both pass).
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from switchboard.models import Human, Owned, Team, TeamMember, TeamRole
from switchboard.scope import administers, managed_by, teams_of

# Names kept from teams: a page word under /teams/ (switchboard/urls.py has none at that level
# yet; "new" is kept for a form of its own, as /endpoints/new and /sources/new are).
RESERVED_NAMES = frozenset({"new"})


class TeamRefused(Exception):
    """A team change refused, with nothing written; ``code`` names the reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def create_team(name: str, owner: Human) -> Team:
    """Create the team ``name`` with ``owner`` as its first admin."""
    team = Team(name=name)
    try:
        if name in RESERVED_NAMES:
            raise ValidationError({"name": f"“{name}” is reserved on the Board"})
        team.full_clean()
    except ValidationError as exc:
        text = " ".join(exc.messages)
        errors = exc.error_dict.get("name", []) if hasattr(exc, "error_dict") else []
        code = "name_taken" if any(e.code == "unique" for e in errors) else "bad_name"
        raise TeamRefused(code, f"team name {name!r}: {text}") from None
    try:
        with transaction.atomic():
            team.save()
            TeamMember.objects.create(team=team, human=owner, role=TeamRole.ADMIN)
    except IntegrityError:
        raise TeamRefused("name_taken", f"a team named {name!r} exists") from None
    return team


def add_member(team: Team, human: Human, *, admin: bool = False) -> TeamMember:
    """Add ``human`` to ``team`` (as an admin with ``admin``); refused if already a member."""
    role = TeamRole.ADMIN if admin else TeamRole.MEMBER
    try:
        with transaction.atomic():
            return TeamMember.objects.create(team=team, human=human, role=role)
    except IntegrityError:
        raise TeamRefused(
            "already_member", f"{human.username} is already a member of team {team.name}"
        ) from None


def remove_member(team: Team, human: Human) -> None:
    """Remove ``human`` from ``team``; refused for a non-member and for the last admin."""
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=team.pk).first()
        member = TeamMember.objects.filter(team=team, human=human).first()
        if member is None:
            raise TeamRefused("not_member", f"{human.username} is not a member of team {team.name}")
        if member.role == TeamRole.ADMIN and not _other_admins(team, human):
            raise TeamRefused(
                "last_admin",
                f"{human.username} is the last admin of team {team.name}; make another"
                " member an admin first",
            )
        member.delete()


def set_role(team: Team, human: Human, *, admin: bool) -> TeamMember:
    """Make a member an admin or a plain member; refused for a non-member and for demoting
    the last admin."""
    with transaction.atomic():
        Team.objects.select_for_update().filter(pk=team.pk).first()
        member = TeamMember.objects.filter(team=team, human=human).first()
        if member is None:
            raise TeamRefused("not_member", f"{human.username} is not a member of team {team.name}")
        if not admin and member.role == TeamRole.ADMIN and not _other_admins(team, human):
            raise TeamRefused(
                "last_admin", f"{human.username} is the last admin of team {team.name}"
            )
        member.role = TeamRole.ADMIN if admin else TeamRole.MEMBER
        member.save(update_fields=["role"])
        return member


def _other_admins(team: Team, human: Human) -> bool:
    return TeamMember.objects.filter(team=team, role=TeamRole.ADMIN).exclude(human=human).exists()


def administered(human_id: int) -> list[Team]:
    """The teams ``human_id`` administers, by name: what they may make an endpoint, a source or
    a channel for, or move one into."""
    return list(Team.objects.filter(pk__in=teams_of(human_id, admin=True)).order_by("name"))


def named_team(name: str, by: Human) -> Team:
    """The team a move names (a form's value, cut to 200 characters); ``TeamRefused``
    ``not_team_admin`` for a name no team has, the refusal a team ``by`` does not administer
    gets from ``check_move``, so the name tells nothing of which teams exist."""
    name = name[:200]
    team = None if "\x00" in name else Team.objects.filter(name=name).first()
    if team is None:
        raise TeamRefused("not_team_admin", f"{by.username} does not administer team {name!r}")
    return team


def check_move(owned: Owned, team: Team, *, by: Human | None) -> None:
    """Refuse moving ``owned`` (an endpoint or a source) into ``team`` unless ``by`` (None: the
    system, a command without ``--as``) administers ``team`` and manages ``owned`` (owns it, or
    administers the team that owns it), and ``owned`` is not the team's already. The writers
    (``credentials.move_endpoint``, ``todos.intake.sources.move_source``) call it with the row
    locked."""
    if by is not None:
        if not administers(by.pk, team):
            raise TeamRefused(
                "not_team_admin", f"{by.username} does not administer team {team.name}"
            )
        if not type(owned).objects.filter(managed_by(by.pk), pk=owned.pk).exists():  # type: ignore[attr-defined]
            raise TeamRefused("not_manager", f"{by.username} does not own or administer {owned}")
    if owned.team_id == team.pk:
        raise TeamRefused("already_team", f"{owned} already belongs to team {team.name}")
