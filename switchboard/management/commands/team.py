"""Teams from the shell: create one, add and remove members, move an endpoint or a source in.

``manage.py team create NAME --owner USER`` (USER becomes its first admin), ``team add NAME USER
[--admin]``, ``team remove NAME USER``, ``team role NAME USER --admin|--member``, ``team move
NAME --endpoint SLUG`` / ``--source SLUG`` and ``team show NAME``. A move with ``--as USER`` is
that operator's (refused unless they administer the team and own or administer what moves);
without it, the system's. Every refusal is one line naming its reason, exit 1, nothing changed
(switchboard/teams.py says the same words on the Board and in the admin).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from switchboard import credentials, teams
from switchboard.models import Endpoint, Human, Team, TeamMember
from todos.intake.sources import move_source
from todos.models import Source


class Command(BaseCommand):
    help = "Create teams, manage their members, move endpoints and sources into them."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Create a team with its first admin.")
        create.add_argument("name")
        create.add_argument("--owner", required=True, help="The first admin's username.")
        add = actions.add_parser("add", help="Add an operator to a team.")
        add.add_argument("name")
        add.add_argument("user")
        add.add_argument("--admin", action="store_true", help="As an admin (default: member).")
        remove = actions.add_parser("remove", help="Remove an operator from a team.")
        remove.add_argument("name")
        remove.add_argument("user")
        role = actions.add_parser("role", help="Make a member an admin, or an admin a member.")
        role.add_argument("name")
        role.add_argument("user")
        which = role.add_mutually_exclusive_group(required=True)
        which.add_argument("--admin", action="store_true")
        which.add_argument("--member", action="store_true")
        move = actions.add_parser("move", help="Give an endpoint or a source to a team.")
        move.add_argument("name")
        what = move.add_mutually_exclusive_group(required=True)
        what.add_argument("--endpoint", metavar="SLUG")
        what.add_argument("--source", metavar="SLUG")
        move.add_argument(
            "--as",
            dest="as_user",
            metavar="USERNAME",
            help="Move as this operator (must administer the team and own or administer what"
            " moves); default: the system.",
        )
        show = actions.add_parser("show", help="List a team's members and what it owns.")
        show.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, "do_" + options["action"])(options)
        except teams.TeamRefused as exc:
            raise CommandError(f"refused ({exc.code}): {exc.message}") from None

    def do_create(self, options: dict[str, Any]) -> None:
        team = teams.create_team(options["name"], _human(options["owner"]))
        self.stdout.write(f"Created team {team.name}; {options['owner']} is its admin.")

    def do_add(self, options: dict[str, Any]) -> None:
        team, human = _team(options["name"]), _human(options["user"])
        member = teams.add_member(team, human, admin=options["admin"])
        self.stdout.write(f"Added {human.username} to team {team.name} as {member.role}.")

    def do_remove(self, options: dict[str, Any]) -> None:
        team, human = _team(options["name"]), _human(options["user"])
        teams.remove_member(team, human)
        self.stdout.write(f"Removed {human.username} from team {team.name}.")

    def do_role(self, options: dict[str, Any]) -> None:
        team, human = _team(options["name"]), _human(options["user"])
        member = teams.set_role(team, human, admin=options["admin"])
        self.stdout.write(f"{human.username} is now {member.role} of team {team.name}.")

    def do_move(self, options: dict[str, Any]) -> None:
        team = _team(options["name"])
        by = _human(options["as_user"]) if options["as_user"] is not None else None
        if options["endpoint"] is not None:
            endpoint = Endpoint.objects.filter(slug=options["endpoint"]).first()
            if endpoint is None:
                raise CommandError(f"no endpoint with slug {options['endpoint']!r}")
            credentials.move_endpoint(endpoint, team, by=by)
            self.stdout.write(f"Moved endpoint {endpoint.slug} to team {team.name}.")
        else:
            source = Source.objects.filter(slug=options["source"]).first()
            if source is None:
                raise CommandError(f"no source with slug {options['source']!r}")
            move_source(source, team, by=by)
            self.stdout.write(f"Moved source {source.slug} to team {team.name}.")

    def do_show(self, options: dict[str, Any]) -> None:
        team = _team(options["name"])
        for member in TeamMember.objects.filter(team=team).select_related("human"):
            self.stdout.write(f"{member.role:6}  {member.human.username}")
        for endpoint in Endpoint.objects.filter(team=team):
            self.stdout.write(f"endpoint {endpoint.slug}")
        for source in Source.objects.filter(team=team):
            self.stdout.write(f"source   {source.slug}")


def _team(name: str) -> Team:
    team = Team.objects.filter(name=name).first()
    if team is None:
        raise CommandError(f"no team named {name!r}")
    return team


def _human(username: str) -> Human:
    human = Human.objects.filter(username=username).first()
    if human is None:
        raise CommandError(f"no operator named {username!r}")
    return human
