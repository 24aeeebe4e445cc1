"""Teams and their members: the only module that writes them (docs/decisions/0034-teams.md),
and the check every move of an endpoint or a source into a team passes.

The Board, the admin and ``manage.py team`` call these functions, so a refusal reads the same
on every screen. Each refusal is a ``TeamRefused`` with a ``code`` naming the reason, raised
before anything is written: a bad or taken name, a human already in the team, removing the
last admin, or a mover who does not administer the team or manage the endpoint.

A team always keeps an admin: creating one makes its creator the first, and the last cannot be
removed or demoted, nor deleted with their human (``delete_humans``; the team's row is locked
while admins are counted, so two removals racing cannot both pass).
"""

from __future__ import annotations

from collections.abc import Collection

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

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
        check_remove(team, human).delete()


def check_remove(team: Team, human: Human) -> TeamMember:
    """``human``'s membership of ``team``, or the refusal ``remove_member`` would give: a
    non-member (``not_member``), the last admin (``last_admin``). The Board asks it before its
    question, so a removal that would be refused is not asked about; ``remove_member`` asks it
    again with the team locked."""
    member = TeamMember.objects.filter(team=team, human=human).first()
    if member is None:
        raise TeamRefused("not_member", f"{human.username} is not a member of team {team.name}")
    if member.role == TeamRole.ADMIN and not _other_admins(team, human):
        raise TeamRefused(
            "last_admin",
            f"{human.username} is the last admin of team {team.name}; make another"
            " member an admin first",
        )
    return member


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


def last_admin_refusals(human_ids: Collection[int]) -> list[tuple[TeamMember, TeamRefused]]:
    """What deleting the humans ``human_ids`` together would take from their teams: for each
    team whose every admin is among them, one of those admin memberships with the
    ``last_admin`` refusal naming the team, by team name. Their memberships go with a deleted
    human (``TeamMember.human`` cascades), so without this check a team could be left with
    members and no admin, which only the system could mend."""
    ids = set(human_ids)
    admins = (
        TeamMember.objects.filter(
            role=TeamRole.ADMIN,
            team__in=TeamMember.objects.filter(human__in=ids, role=TeamRole.ADMIN).values("team"),
        )
        .select_related("team", "human")
        .order_by("team__name", "human__username")
    )
    by_team: dict[int, list[TeamMember]] = {}
    for member in admins:
        by_team.setdefault(member.team_id, []).append(member)
    refusals = []
    for members in by_team.values():
        if any(m.human_id not in ids for m in members):
            continue
        names = [m.human.username for m in members]
        who = (
            f"{names[0]} is the last admin"
            if len(names) == 1
            else f"{', '.join(names[:-1])} and {names[-1]} are the last admins"
        )
        refusal = TeamRefused(
            "last_admin",
            f"{who} of team {members[0].team.name}; make another member an admin first",
        )
        refusals.append((members[0], refusal))
    return refusals


def delete_humans(humans: QuerySet[Human]) -> None:
    """Delete ``humans`` with their memberships; refused (``last_admin``, nothing deleted) when
    that would leave a team without an admin. The teams they administer are locked first, as
    ``remove_member`` locks its team, so a removal or a delete racing this one cannot take the
    other admin meanwhile."""
    with transaction.atomic():
        ids = list(humans.values_list("pk", flat=True))
        administered = TeamMember.objects.filter(human__in=ids, role=TeamRole.ADMIN)
        list(
            Team.objects.select_for_update()
            .filter(pk__in=administered.values("team"))
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        refusals = last_admin_refusals(ids)
        if refusals:
            raise refusals[0][1]
        Human.objects.filter(pk__in=ids).delete()


def _other_admins(team: Team, human: Human) -> bool:
    return TeamMember.objects.filter(team=team, role=TeamRole.ADMIN).exclude(human=human).exists()


def administered(human_id: int) -> list[Team]:
    """The teams ``human_id`` administers, by name: what they may make an endpoint, a source or
    a channel for, or move one into."""
    return list(Team.objects.filter(pk__in=teams_of(human_id, admin=True)).order_by("name"))


def roster(team: Team) -> tuple[list[str], list[str]]:
    """The usernames of ``team``'s admins and of its other members, each alphabetically: who a
    move into the team or a removal from it is said to reach."""
    admins: list[str] = []
    members: list[str] = []
    rows = TeamMember.objects.filter(team=team).order_by("human__username")
    for username, role in rows.values_list("human__username", "role"):
        (admins if role == TeamRole.ADMIN else members).append(username)
    return admins, members


def left_behind(owned: Owned, team: Team) -> list[str]:
    """The usernames of the members of the team that owns ``owned`` who are not in ``team``:
    moving ``owned`` into ``team`` takes it from them. Empty for what a human owns."""
    if owned.team_id is None:
        return []
    staying = TeamMember.objects.filter(team=team).values("human_id")
    return list(
        TeamMember.objects.filter(team_id=owned.team_id)
        .exclude(human_id__in=staying)
        .order_by("human__username")
        .values_list("human__username", flat=True)
    )


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
