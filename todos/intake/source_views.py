"""The Board's webhook pages: sources, their rules, their events (paged, searchable), and the rule
tester.

Every read is scoped to the sources the logged-in human sees (``_own_source``): its own and its
teams' (``switchboard/scope.py``); every member of the owning team sees and acts on a team's
source, its secret and rules as its creator does. Anyone else's source, rule or event answers
404 exactly like an unknown one, staff included. A source is made for the human or for a team
it administers ("Owned by"), and moves into a team ("Move to team") only by a human who manages
it and administers the team (``switchboard.teams.check_move``), after a question saying what
moves and which rules stop routing. Sources and rules are written only through
``todos.intake.sources`` (rules through ``todos.intake.forms.RuleForm``, which saves through it),
so the Board holds them to the same checks and meanings as the admin and commands.

A secret's plaintext is shown once (creation, rotation, turning verification on without a
secret): the POST that mints it keeps it in the session and redirects, and the page it redirects
to takes it out and renders it (``switchboard.lib.guards.stash_shown_once``), so a reload shows it
no more and posts nothing again. It never goes into a message, a log line or a URL, and that page
is never cached. Rotation asks to confirm first, and carries a fingerprint of the secret it
replaces, so a second rotation from the same page (whose secret has since changed) rotates
nothing.

Payloads, headers and routing traces are what a webhook sender chose: they reach the templates
as plain strings and are escaped there, never marked safe.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.postgres.expressions import ArraySubquery
from django.core.exceptions import ValidationError
from django.db.models import (
    Count,
    DateTimeField,
    Exists,
    ExpressionWrapper,
    IntegerField,
    OuterRef,
    Q,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce, Now
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from switchboard.lib import jsonlimits, keyset
from switchboard.lib.guards import (
    BoardRequest,
    confirmed,
    holds_secret,
    login_required,
    pop_shown_once,
    stash_shown_once,
)
from switchboard.lib.notfound import NotFound
from switchboard.models import Team, TeamMember, TeamRole
from switchboard.scope import managed_by, owned_by
from switchboard.team_moves import move_asked_first
from switchboard.teams import (
    administered,
    left_behind,
    roster,
)
from todos.intake import deliveries, routing, sources
from todos.intake.forms import RuleForm, RuleTestForm
from todos.intake.traces import present_trace
from todos.models import Event, EventDisposition, Rule, SignatureScheme, Source, Todo

RECENT_EVENTS = 20

# --- presentation: a routing trace as people read it -----------------------------------------


@dataclass(frozen=True, slots=True)
class WouldCreate:
    """A todo the tester's delivery would create."""

    rule: str
    endpoint: str
    queue: str
    title: str
    title_cut: bool
    work_order: str
    max_attempts: int
    missing_fields: list[str]


def _would_create(plan: routing.RoutingPlan) -> list[WouldCreate]:
    todos = []
    for planned in plan.todos:
        todos.append(
            WouldCreate(
                rule=planned.rule.called,
                endpoint=planned.rule.endpoint_slug,
                queue=planned.rule.queue,
                title=planned.title,
                title_cut=planned.title_cut,
                work_order=planned.work_order,
                max_attempts=planned.rule.max_attempts,
                missing_fields=list(planned.trace.get("missing_fields", [])),
            )
        )
    return todos


# --- forms -----------------------------------------------------------------------------------


class SourceForm(forms.Form):
    slug = forms.SlugField(
        max_length=64,
        help_text="Names the source in its URL (/hooks/<slug>); it cannot be changed later.",
    )
    name = forms.CharField(required=False, help_text="For people; the slug when left empty.")
    verify = forms.BooleanField(
        required=False,
        initial=True,
        label="Verify signatures",
        help_text="Refuse deliveries without a valid HMAC-SHA256 signature (recommended). "
        "Without it, anyone who knows the URL can create todos.",
    )
    scheme = forms.ChoiceField(
        choices=SignatureScheme.choices,
        initial=SignatureScheme.GITHUB,
        required=False,  # GitHub's when not sent
        label="Signatures",
        help_text="GitHub's X-Hub-Signature-256 over the body, or Standard Webhooks"
        " (webhook-id, webhook-timestamp, webhook-signature), which also signs the time and"
        " the delivery id. It cannot be changed later.",
    )
    # Who owns it: the human (blank) or a team they administer, as the vend wizard asks.
    owned_by = forms.ChoiceField(required=False, choices=[("", "you")], label="Owned by")

    def __init__(self, *args: Any, admin_teams: Sequence[Team] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["owned_by"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "you"), *((t.name, f"team {t.name}") for t in admin_teams)]
        self.teams = {t.name: t for t in admin_teams}

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        sources.validate_slug(slug)  # create_source checks it again; here it shows in place
        return slug


# --- scope -----------------------------------------------------------------------------------


def _own_source(request: BoardRequest, slug: str) -> Source:
    """The source ``slug`` if the human sees it (its own or its teams'); 404 for an unknown or
    foreign one (staff too). In the same query: ``managed``, whether the human manages it (owns
    it, or administers its team: only they move it into a team), and ``admin_teams``, the names
    of the teams the human administers (where it may move)."""
    managed = Source.objects.filter(managed_by(request.user.id), pk=OuterRef("pk"))
    admin_teams = (
        TeamMember.objects.filter(human_id=request.user.id, role=TeamRole.ADMIN)
        .order_by("team__name")
        .values("team__name")
    )
    source = (
        Source.objects.filter(owned_by(request.user.id), slug=slug)
        .annotate(managed=Exists(managed), admin_teams=ArraySubquery(admin_teams))
        .select_related("owner", "team")
        .first()
    )
    if source is None:
        raise NotFound("Source", slug, section="sources")
    return source


def _admin_teams(request: BoardRequest) -> list[Team]:
    """The teams the human administers: a source may be made for, or moved into, these."""
    return administered(request.user.id)


def _own_rule(source: Source, rule_id: int) -> Rule:
    rule = Rule.objects.filter(source=source, id=rule_id).select_related("endpoint").first()
    if rule is None:
        raise NotFound(
            "Rule", f"id {rule_id}", section="sources", why="it is not one of this source's rules"
        )
    rule.source = source
    return rule


def _webhook_url(request: BoardRequest, source: Source) -> str:
    return request.build_absolute_uri(f"/hooks/{source.slug}")


# --- the secret, shown once ------------------------------------------------------------------

# The example's body carries the delivery's id in its run URL, so each run of the snippet is a
# new delivery: a signed body is accepted once per source (the same body again, even under a
# new delivery id, is a duplicate: migration todos.0018_events_signed_body).
_RUN = "@RUN@"
EXAMPLE_BODY = json.dumps(
    {
        "action": "completed",
        "check_run": {
            "name": "test (3.12)",
            "conclusion": "failure",
            "html_url": f"https://github.com/example/shop/runs/{_RUN}",
        },
        "repository": {"full_name": "example/shop"},
    },
    separators=(",", ":"),
)
# A new id for each run (bash and zsh add $RANDOM, so two runs in one second differ too).
_NEW_ID = "ID=try-$(date +%s)-$RANDOM"
# The body in single quotes, with $ID spliced in double quotes where the run goes.
_BODY_LINE = "BODY='" + EXAMPLE_BODY.replace(_RUN, "'\"$ID\"'") + "'"


def curl_example(url: str, secret: str | None, scheme: str = SignatureScheme.GITHUB) -> str:
    """A shell snippet that delivers a signed check_run failure (unsigned without a secret),
    a new delivery each time it runs."""
    if secret and scheme == SignatureScheme.STANDARD_WEBHOOKS:
        return _standard_curl_example(url, secret)
    lines = []
    if secret:
        lines.append(f"SECRET='{secret}'")
    lines.append(_NEW_ID)
    lines.append(_BODY_LINE)
    if secret:
        lines.append(
            "SIG=$(printf '%s' \"$BODY\" | openssl dgst -sha256 -hmac \"$SECRET\" | sed 's/^.* //')"
        )
    lines.append(f"curl -sS {url} \\")
    lines.append("  -H 'Content-Type: application/json' \\")
    lines.append("  -H 'X-GitHub-Event: check_run' \\")
    lines.append('  -H "X-GitHub-Delivery: $ID" \\')
    if secret:
        lines.append('  -H "X-Hub-Signature-256: sha256=$SIG" \\')
    lines.append('  --data-binary "$BODY"')
    return "\n".join(lines)


def _standard_curl_example(url: str, secret: str) -> str:
    """The Standard Webhooks delivery: the HMAC of id.timestamp.body keyed with the secret's
    base64 key (openssl takes it as hex)."""
    return "\n".join(
        [
            f"SECRET='{secret}'",
            f"{_NEW_ID}; TS=$(date +%s)",
            _BODY_LINE,
            "KEY=$(printf '%s' \"${SECRET#whsec_}\" | base64 -d | od -An -v -tx1 | tr -d ' \\n')",
            'SIG=$(printf \'%s.%s.%s\' "$ID" "$TS" "$BODY"'
            ' | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$KEY" -binary | base64)',
            f"curl -sS {url} \\",
            "  -H 'Content-Type: application/json' \\",
            '  -H "webhook-id: $ID" \\',
            '  -H "webhook-timestamp: $TS" \\',
            '  -H "webhook-signature: v1,$SIG" \\',
            '  --data-binary "$BODY"',
        ]
    )


def _show_secret(
    request: BoardRequest, source: Source, secret: str | None, title: str
) -> HttpResponse:
    """Keep the new secret for the page that shows it once and go there (POST-redirect-GET)."""
    stash_shown_once(request, "secret", slug=source.slug, secret=secret, title=title)
    return redirect("source_secret_shown", slug=source.slug)


@login_required
@require_GET
def source_secret_shown(request: BoardRequest, slug: str) -> HttpResponse:
    """The secret just minted (and the URL, the GitHub settings, a curl line), once; a reload
    goes to the source's page instead."""
    source = _own_source(request, slug)
    shown = pop_shown_once(request, "secret", slug=source.slug)
    if shown is None:
        messages.info(
            request,
            "A secret is shown only once. If it was not copied, rotate it and give the sender"
            " the new one.",
        )
        return redirect("source_detail", slug=source.slug)
    secret = shown.get("secret")
    url = _webhook_url(request, source)
    response = render(
        request,
        "sources/secret_shown.html",
        {
            "section": "sources",
            "title": shown.get("title") or f"New secret for {source.slug}",
            "source": source,
            "secret": secret,
            "webhook_url": url,
            "curl": curl_example(url, secret, source.scheme),
        },
    )
    return holds_secret(response)


# --- pages -----------------------------------------------------------------------------------


def _count(queryset: Any) -> Coalesce:
    """A correlated ``count(*)`` of ``queryset`` (already filtered on ``OuterRef``), 0 if none."""
    counted = queryset.order_by().values("source_id").annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


@login_required
@require_GET
def source_list(request: BoardRequest) -> HttpResponse:
    """The human's sources with their rule counts and recent deliveries, in one query."""
    since = ExpressionWrapper(Now() - Value(dt.timedelta(hours=24)), output_field=DateTimeField())
    # Uses index: events_source_received_idx, for the count and for the last event alike.
    events = Event.objects.filter(source_id=OuterRef("pk"))
    last = events.order_by("-received_at", "-id")
    rows = (
        Source.objects.filter(owned_by(request.user.id))
        .select_related("owner", "team")
        .only("slug", "name", "verify", "created_at", "owner__username", "team__name")
        .annotate(
            rule_count=_count(Rule.objects.filter(source_id=OuterRef("pk"))),
            events_24h=_count(events.filter(received_at__gte=since)),
            last_event_at=Subquery(last.values("received_at")[:1]),
            last_disposition=Subquery(last.values("disposition")[:1]),
        )
    )
    return render(request, "sources/source_list.html", {"section": "sources", "sources": rows})


@login_required
@require_http_methods(["GET", "POST"])
def source_new(request: BoardRequest) -> HttpResponse:
    """Slug, name, verification and its owner (the human or a team it administers); answers
    the secret and the URL, shown this once."""
    form = SourceForm(request.POST or None, admin_teams=_admin_teams(request))
    if request.method == "POST" and form.is_valid():
        team = form.teams.get(form.cleaned_data["owned_by"])
        try:
            source, secret = sources.create_source(
                None if team is not None else request.user,
                form.cleaned_data["slug"],
                team=team,
                name=form.cleaned_data["name"].strip(),
                verify=form.cleaned_data["verify"],
                scheme=form.cleaned_data["scheme"] or SignatureScheme.GITHUB,
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return _show_secret(request, source, secret, f"Source {source.slug} is ready")
    return render(request, "sources/source_new.html", {"section": "sources", "form": form})


EVENTS_SEARCH_MAX_CHARS = 200


@dataclass(frozen=True, slots=True)
class EventCursor:
    """A keyset position in a source's events: the (received_at, id) of the last one shown,
    newest first, carried as opaque text (``switchboard/lib/keyset.py``)."""

    received_at: dt.datetime
    id: int

    def encode(self) -> str:
        return keyset.encode([keyset.stamp(self.received_at), self.id])

    @classmethod
    def decode(cls, text: str) -> EventCursor | None:
        """The cursor ``text`` names, or None (the events then start from the newest)."""
        value = keyset.decode(text, max_chars=200)
        if value is None or len(value) != 2:
            return None
        stamp, event_id = value
        received_at = keyset.parse_stamp(stamp)
        if received_at is None or type(event_id) is not int or not 0 < event_id < 2**63:
            return None
        return cls(received_at, event_id)


@dataclass(frozen=True, slots=True)
class EventFilters:
    """The source page's event filters: ``q`` (a delivery id's start, or text in a rejected
    delivery's body prefix) and a disposition; empty means "any". ``errors`` says what cannot
    be read, and such filters match nothing."""

    q: str = ""
    disposition: str = ""

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> EventFilters:
        return cls(q=params.get("q", "").strip(), disposition=params.get("disposition", ""))

    @property
    def errors(self) -> tuple[str, ...]:
        if (reason := jsonlimits.text_problem(self.q)) is not None:
            return (f"Search {reason}: nothing can match it.",)
        if len(self.q) > EVENTS_SEARCH_MAX_CHARS:
            return (f"Search is at most {EVENTS_SEARCH_MAX_CHARS} characters.",)
        if self.disposition and self.disposition not in EventDisposition.values:
            names = ", ".join(EventDisposition.values)
            return (f"Unknown disposition: choose {names}, or any.",)
        return ()

    def to_params(self) -> dict[str, str]:
        return {k: v for k, v in (("q", self.q), ("disposition", self.disposition)) if v}


@dataclass(frozen=True, slots=True)
class EventPage:
    events: Sequence[Event]
    next_cursor: EventCursor | None


def _event_page(source: Source, filters: EventFilters, after: EventCursor | None) -> EventPage:
    """A page of the source's events, newest first, after ``after``, that ``filters`` match.

    Uses index: events_source_received_idx (source_id, received_at DESC), the cursor's time an
    index bound; a search or a disposition filters the rows as the scan reads them, so a rare
    match may read every event the source has kept (retention bounds them). Payloads and
    headers stay in the database.
    """
    if filters.errors:
        return EventPage([], None)
    size = RECENT_EVENTS
    todo_ids = Todo.objects.filter(event_id=OuterRef("pk")).order_by("created_at").values("id")
    events = Event.objects.filter(source=source)
    if after is not None:
        events = events.filter(
            Q(received_at__lt=after.received_at)
            | Q(received_at=after.received_at, id__lt=after.id),
            received_at__lte=after.received_at,
        )
    if filters.q:
        events = events.filter(
            Q(delivery_id__startswith=filters.q) | Q(body_prefix__icontains=filters.q)
        )
    if filters.disposition:
        events = events.filter(disposition=filters.disposition)
    rows = list(
        events.defer("payload", "headers")
        .annotate(todo_ids=ArraySubquery(todo_ids))
        .order_by("-received_at", "-id")[: size + 1]
    )
    more = len(rows) > size
    rows = rows[:size]
    return EventPage(rows, EventCursor(rows[-1].received_at, rows[-1].id) if more else None)


def _event_row(event: Event) -> dict[str, Any]:
    verification = event.verification if isinstance(event.verification, dict) else {}
    return {
        "event": event,
        "verification": str(verification.get("result") or "—"),
        "trace": present_trace(event.routing_trace),
        "todo_ids": getattr(event, "todo_ids", None) or [],
    }


@login_required
@require_GET
def source_detail(request: BoardRequest, slug: str) -> HttpResponse:
    """One source: its URL, verification, rules in evaluation order, its events (newest first,
    a page at a time, searchable), the tester."""
    source = _own_source(request, slug)
    filters = EventFilters.parse(request.GET)
    after = EventCursor.decode(request.GET.get("after", ""))  # malformed: from the newest
    page = _event_page(source, filters, after)
    rules = [
        (rule, json.dumps(rule.match, indent=2, ensure_ascii=False))
        for rule in source.rules.select_related("endpoint").order_by("position", "id")
    ]
    context = {
        "section": "sources",
        "source": source,
        "webhook_url": _webhook_url(request, source),
        "fingerprint": sources.secret_fingerprint(source.secret),
        "tolerance_seconds": settings.SWITCHBOARD_HOOK_TIMESTAMP_TOLERANCE_SECONDS,
        "rules": rules,
        "events": [_event_row(e) for e in page.events],
        "event_filters": filters,
        "event_filter_errors": filters.errors,
        "dispositions": EventDisposition.values,
        "events_next_query": urlencode(filters.to_params() | {"after": page.next_cursor.encode()})
        if page.next_cursor
        else None,
        "events_first_query": urlencode(filters.to_params()) if after else None,
        "tester": RuleTestForm(),
        # The teams it may move into: those the human administers, less its own.
        "move_teams": [
            name
            for name in getattr(source, "admin_teams", None) or []
            if source.team is None or name != source.team.name
        ]
        if getattr(source, "managed", False)
        else [],
    }
    return render(request, "sources/source_detail.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def source_move(request: BoardRequest, slug: str) -> HttpResponse:
    """Ask first; then give the source to a team: only a human who manages it and administers
    the team (``sources.move_source`` refuses anyone else, by name, and changes nothing). Its
    rules then route to the team's endpoints only. A GET, or a POST without ``confirm=yes``
    (the page's "Move…"), is refused as the move would be, or shows what moves, who then sees
    and manages it and which rules stop routing: there is no way back to a person
    (docs/decisions/0034-teams.md), so it is said before, not after."""
    source = _own_source(request, slug)
    return move_asked_first(
        request,
        source,
        move=lambda team: sources.move_source(source, team, by=request.user),
        question=lambda team: render(
            request, "sources/source_move.html", _move_question(source, team)
        ),
        moved=lambda team: (
            f"Moved {source.slug} to team {team.name}: its members see and"
            " manage it, and its rules route to the team's endpoints only."
        ),
        back=redirect("source_detail", slug=source.slug),
    )


def _move_question(source: Source, team: Team) -> dict[str, Any]:
    """What moving ``source`` into ``team`` takes along and who then reaches it: its rules, the
    team's members (every one manages a source), those of the team that owned it who are not in
    ``team``, and the rules whose endpoint is not the team's, which stop creating todos
    (``scope.routable_from``)."""
    admins, members = roster(team)
    stranded = (
        source.rules.exclude(endpoint__team=team)
        .select_related("endpoint")
        .order_by("position", "id")
    )
    return {
        "section": "sources",
        "source": source,
        "team": team,
        "rules": source.rules.count(),
        "people": admins + members,
        "leaving": left_behind(source, team),
        "stranded": list(stranded),
    }


@login_required
@require_POST
def source_rotate(request: BoardRequest, slug: str) -> HttpResponse:
    """Ask first; then mint a new secret (verification on): the old one stops working at once.
    A POST without ``confirm=yes`` (the source page's button) shows the question."""
    source = _own_source(request, slug)
    if not confirmed(request):
        return render(
            request,
            "sources/secret_rotate.html",
            {"section": "sources", "source": source, "current": request.POST.get("current", "")},
        )
    source, secret = sources.rotate_secret_if_current(source.pk, request.POST.get("current", ""))
    if secret is None:
        messages.info(
            request,
            f"The secret of {source.slug} was already rotated from this page; a secret is shown"
            " only once. Rotate again if it was lost.",
        )
        return redirect("source_detail", slug=source.slug)
    return _show_secret(request, source, secret, f"New secret for {source.slug}")


@login_required
@require_POST
def source_verify(request: BoardRequest, slug: str) -> HttpResponse:
    """Turn verification on (minting a secret, shown once, when there is none) or off."""
    source = _own_source(request, slug)
    verify = request.POST.get("verify") == "on"
    minted = sources.set_verify(source, verify)
    if minted is not None:
        return _show_secret(request, source, minted, f"Verification is on for {source.slug}")
    if verify:
        messages.success(request, f"{source.slug} verifies signatures with its current secret.")
    else:
        messages.warning(
            request,
            f"{source.slug} accepts unsigned deliveries: anyone who knows its URL can create"
            " todos.",
        )
    return redirect("source_detail", slug=source.slug)


@login_required
@require_http_methods(["GET", "POST"])
def source_test(request: BoardRequest, slug: str) -> HttpResponse:
    """The rule tester: headers and a payload in, the routing trace out; nothing is stored.

    The headers go through ``routing.stored_headers`` as a delivery's do, so a rule can no more
    match a secret header here than in intake. An htmx POST gets the result fragment only.
    """
    source = _own_source(request, slug)
    form = RuleTestForm(request.POST or None)
    context: dict[str, Any] = {"section": "sources", "source": source, "tester": form}
    if request.method == "POST" and form.is_valid():
        headers = routing.stored_headers(form.cleaned_data["headers"])
        plan = deliveries.plan_for(source, headers, form.cleaned_data["payload"])
        context |= {
            "tested": True,
            "headers": headers,
            "trace": present_trace(plan.trace),
            "would_create": _would_create(plan),
        }
    elif request.method == "POST":
        context["tested"] = False
    if request.htmx and request.method == "POST":
        return render(request, "sources/source_test.html#result", context)
    return render(request, "sources/source_test.html", context)


@login_required
@require_GET
def source_event(request: BoardRequest, slug: str, event_id: int) -> HttpResponse:
    """One event as received: headers (secrets were never stored), verification, payload, trace."""
    source = _own_source(request, slug)
    event = (
        Event.objects.filter(source=source, id=event_id)
        .annotate(
            todo_ids=ArraySubquery(
                Todo.objects.filter(event_id=OuterRef("pk")).order_by("created_at").values("id")
            )
        )
        .first()
    )
    if event is None:
        raise NotFound(
            "Event", event_id, section="sources", why="it is not one of this source's deliveries"
        )
    context = {
        "section": "sources",
        "source": source,
        **_event_row(event),
        "headers_json": json.dumps(event.headers, indent=2, ensure_ascii=False),
        "verification_json": json.dumps(event.verification, indent=2, ensure_ascii=False),
        "payload_json": json.dumps(event.payload, indent=2, ensure_ascii=False),
    }
    return render(request, "sources/event_detail.html", context)


# --- rules -----------------------------------------------------------------------------------


def _rule_form_page(
    request: BoardRequest, source: Source, form: RuleForm, rule: Rule | None
) -> HttpResponse:
    return render(
        request,
        "sources/rule_form.html",
        {"section": "sources", "source": source, "form": form, "rule": rule},
    )


@login_required
@require_http_methods(["GET", "POST"])
def rule_new(request: BoardRequest, slug: str) -> HttpResponse:
    """Add a rule to the source; appended after the last one unless a position is given."""
    source = _own_source(request, slug)
    form = RuleForm(request.POST or None, instance=Rule(source=source), source=source)
    if request.method == "POST" and form.is_valid():
        try:
            rule = form.save()
        except ValidationError as exc:  # the endpoint was revoked since the form was checked
            form.add_error(None, exc)
        else:
            at = f" at position {rule.position}" if rule.name else ""  # else it says #N (id N)
            messages.success(request, f"Added {rule.label}{at}.")
            return redirect("source_detail", slug=source.slug)
    return _rule_form_page(request, source, form, None)


@login_required
@require_http_methods(["GET", "POST"])
def rule_edit(request: BoardRequest, slug: str, rule_id: int) -> HttpResponse:
    """Edit a rule; the next delivery is routed by the new version."""
    source = _own_source(request, slug)
    rule = _own_rule(source, rule_id)
    form = RuleForm(request.POST or None, instance=rule, source=source)
    if request.method == "POST" and form.is_valid():
        try:
            form.save()
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            messages.success(request, f"Saved {form.instance.label}.")
            return redirect("source_detail", slug=source.slug)
    return _rule_form_page(request, source, form, rule)


@login_required
@require_http_methods(["GET", "POST"])
def rule_delete(request: BoardRequest, slug: str, rule_id: int) -> HttpResponse:
    """Ask, then delete the rule on POST. Past events keep its id in their traces."""
    source = _own_source(request, slug)
    rule = _own_rule(source, rule_id)
    if request.method == "POST":
        label = rule.label  # before the delete, which leaves the instance without its id
        sources.delete_rule(rule)
        messages.success(request, f"Deleted {label}.")
        return redirect("source_detail", slug=source.slug)
    return render(
        request, "sources/rule_delete.html", {"section": "sources", "source": source, "rule": rule}
    )


@login_required
@require_POST
def rule_set_enabled(request: BoardRequest, slug: str, rule_id: int, enabled: bool) -> HttpResponse:
    """Enable or disable a rule (a disabled rule is skipped, and says so in the trace)."""
    source = _own_source(request, slug)
    rule = _own_rule(source, rule_id)
    changed = sources.set_rule_enabled(rule, enabled)
    word = "Enabled" if enabled else "Disabled"
    if changed:
        messages.success(request, f"{word} {rule.label}.")
    else:
        messages.info(request, f"Nothing changed: {rule.label} was already {word.lower()}.")
    return redirect("source_detail", slug=source.slug)
