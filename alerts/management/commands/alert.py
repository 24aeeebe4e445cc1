"""Alert channels from the shell, through ``alerts.channels`` as the admin's forms are.

``manage.py alert channel add (--owner USER | --team NAME) (--webhook URL | --email ADDRESS)
[--name NAME]`` prints the channel's id and, for a webhook, its signing secret (once: it is not
shown again); the channel carries the default rules (dead letter, deadline missed, budget at
80 % and 100 %) on all of the endpoints its owner sees (a team's channel: the team's).
``alert channel list [--owner USER | --team NAME]``; ``alert channel move CHANNEL_ID --team NAME
[--as USER]`` gives a channel to a team (refused, by a named reason, unless USER administers the
team and manages the channel; without ``--as``, the system's move);
``alert rule add CHANNEL_ID KIND [--endpoint SLUG] [--queue Q] [--threshold N] [--for SECONDS]``;
``alert test CHANNEL_ID`` sends a test alert now and prints the answer. Bad input exits 1 with
one line naming the field.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.core.management.base import BaseCommand, CommandError, CommandParser

from alerts import channels, deliver
from alerts.models import AlertChannel, RuleKind
from switchboard.lib.errors import InvalidInput
from switchboard.lib.text import integer_argument
from switchboard.models import Endpoint, Human, Team
from switchboard.teams import TeamRefused


class Command(BaseCommand):
    help = "Add and list alert channels and rules; send a channel a test alert."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        channel = actions.add_parser("channel", help="Add, list, move or rotate channels.")
        channel_actions = channel.add_subparsers(dest="channel_action", required=True)
        add = channel_actions.add_parser("add", help="Add a channel; print its id (and secret).")
        owner = add.add_mutually_exclusive_group(required=True)
        owner.add_argument("--owner", help="The owning operator's username.")
        owner.add_argument(
            "--team", help="The owning team's name (it hears about the team's endpoints)."
        )
        target = add.add_mutually_exclusive_group(required=True)
        target.add_argument("--webhook", help="The URL to POST alerts to.")
        target.add_argument("--email", help="The address to mail alerts to.")
        add.add_argument("--name", default="", help="A name the Board shows.")
        listing = channel_actions.add_parser("list", help="List channels.")
        whose = listing.add_mutually_exclusive_group()
        whose.add_argument("--owner", help="Only this operator's own.")
        whose.add_argument("--team", help="Only this team's.")
        move = channel_actions.add_parser("move", help="Give a channel to a team.")
        move.add_argument("channel_id")
        move.add_argument("--team", required=True, help="The team's name.")
        move.add_argument(
            "--as",
            dest="as_user",
            metavar="USERNAME",
            help="Move as this operator (must administer the team and own or administer the"
            " channel); default: the system.",
        )
        rotate = channel_actions.add_parser(
            "rotate", help="Give a webhook channel a new signing secret; print it once."
        )
        rotate.add_argument("channel_id")
        rule = actions.add_parser("rule", help="Add a rule to a channel.")
        rule_actions = rule.add_subparsers(dest="rule_action", required=True)
        rule_add = rule_actions.add_parser("add")
        rule_add.add_argument("channel_id")
        rule_add.add_argument("kind", choices=RuleKind.values)
        rule_add.add_argument("--endpoint", help="Only this endpoint (its slug).")
        rule_add.add_argument("--queue", help="Only this queue.")
        rule_add.add_argument(
            "--threshold", type=integer_argument, help="depth: more than N pending."
        )
        rule_add.add_argument(
            "--for", dest="for_seconds", type=integer_argument, default=0, help="T, in seconds."
        )
        test = actions.add_parser("test", help="Send a channel a test alert now.")
        test.add_argument("channel_id")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "channel":
                getattr(self, "channel_" + options["channel_action"])(options)
            elif options["action"] == "rule":
                self.rule_add(options)
            else:
                self.test(options)
        except InvalidInput as exc:
            raise CommandError(f"refused: {exc}") from None
        except TeamRefused as exc:
            raise CommandError(f"refused ({exc.code}): {exc.message}") from None

    @staticmethod
    def _human(username: str) -> Human:
        human = Human.objects.filter(username=username).first()
        if human is None:
            raise CommandError(f"no operator named {username!r}")
        return human

    @staticmethod
    def _team(name: str) -> Team:
        team = Team.objects.filter(name=name).first()
        if team is None:
            raise CommandError(f"no team named {name!r}")
        return team

    @staticmethod
    def _channel(channel_id: str) -> AlertChannel:
        try:
            key = UUID(channel_id)
        except ValueError:
            raise CommandError(f"not a channel id: {channel_id!r}") from None
        channel = AlertChannel.objects.filter(id=key).first()
        if channel is None:
            raise CommandError(f"no channel {channel_id}")
        return channel

    def channel_add(self, options: dict[str, Any]) -> None:
        team = self._team(options["team"]) if options["team"] is not None else None
        owner = self._human(options["owner"]) if team is None else None
        channel, secret = channels.add_channel(
            owner,
            team=team,
            webhook=options["webhook"],
            email=options["email"],
            name=options["name"],
        )
        self.stdout.write(f"channel: {channel.pk}")
        if secret:
            self.stdout.write(f"signing secret (shown once): {secret}")
        kinds = ", ".join(r.kind for r in channel.rules.all())
        self.stdout.write(f"rules: {kinds} on all of the endpoints of {channel.owner_label}")

    def channel_list(self, options: dict[str, Any]) -> None:
        found = AlertChannel.objects.select_related("owner", "team").order_by("created_at")
        if options.get("owner"):
            found = found.filter(owner=self._human(options["owner"]))
        if options.get("team"):
            found = found.filter(team=self._team(options["team"]))
        for channel in found:
            state = "on" if channel.enabled else "off"
            self.stdout.write(
                f"{channel.pk}  {channel.kind:7}  {state:3}  {channel.owner_label}"
                f"  {channel.target}"
            )

    def channel_move(self, options: dict[str, Any]) -> None:
        channel = self._channel(options["channel_id"])
        team = self._team(options["team"])
        by = self._human(options["as_user"]) if options["as_user"] is not None else None
        channels.move_channel(channel, team, by=by)
        self.stdout.write(f"Moved channel {channel.pk} to team {team.name}.")

    def channel_rotate(self, options: dict[str, Any]) -> None:
        channel = self._channel(options["channel_id"])
        secret = channels.rotate_secret(channel)
        self.stdout.write(f"signing secret of {channel.pk} (shown once): {secret}")
        self.stdout.write("The old secret no longer signs; messages queued go out with this one.")

    def rule_add(self, options: dict[str, Any]) -> None:
        channel = self._channel(options["channel_id"])
        endpoint = None
        if options.get("endpoint"):
            endpoint = Endpoint.objects.filter(slug=options["endpoint"]).first()
            if endpoint is None:
                raise CommandError(f"no endpoint {options['endpoint']!r}")
        rule = channels.add_rule(
            channel,
            options["kind"],
            endpoint=endpoint,
            queue=options.get("queue"),
            threshold=options.get("threshold"),
            for_seconds=options["for_seconds"],
        )
        self.stdout.write(f"rule: {rule.pk} {rule}")

    def test(self, options: dict[str, Any]) -> None:
        channel = self._channel(options["channel_id"])
        # Unguarded: the shell's test goes now, past an open breaker, as asked.
        queued = channels.queue_test(channel, guarded=False)
        if queued.delivery_id is None:
            raise CommandError(f"no channel {channel.pk}")
        report = deliver.send_due(only=queued.delivery_id)
        if not report.outcomes:
            raise CommandError("the test message could not be taken to send")
        outcome = report.outcomes[0]
        if outcome.delivered:
            code = f" (HTTP {outcome.status_code})" if outcome.status_code else ""
            self.stdout.write(f"delivered{code} in {outcome.duration_ms} ms")
            return
        later = " (queued to retry)" if outcome.retry else ""
        raise CommandError(f"not delivered: {outcome.error}{later}")
