"""The Board's endpoint pages: the list, the vend wizard, keys, push rings, and revocation.

Both the list and an endpoint's page show its fleet (``todos.fleet``): when its agents were last
seen, the subscription streams open now, the todos it holds with their leases counting down
(static/lease.js), and how many of its agents' attempts failed or died in the last hour and day.

A key's plaintext is shown once: the POST that mints it keeps it in the session and redirects
(``stash_shown_once``), and the page it redirects to takes it out and renders it
(``pop_shown_once``), so a reload shows it no more and mints nothing. It never goes into a
message, a log line or a URL, and that page is never cached. The configuration snippets name the
key as ``$SWITCHBOARD_KEY``, set by the one export line beside the key, so a checked-in
``.mcp.json`` carries no key. Revoking a key or the endpoint, and moving it into a team, ask to
confirm first.

Every read here is scoped to the endpoints the logged-in human owns; another human's slug answers
404 exactly like an unknown one. Endpoints and keys are written only through
``switchboard.credentials``, as in the admin and the commands.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Exists, OuterRef, Q
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from switchboard import credentials, oauth
from switchboard.lib.guards import (
    BoardRequest,
    confirmed,
    holds_secret,
    login_required,
    pop_shown_once,
    stash_shown_once,
)
from switchboard.lib.notfound import NotFound
from switchboard.models import DRAIN_VERBS, Endpoint, EndpointKey, Team, Verb
from switchboard.scope import Scope
from switchboard.team_moves import move_asked_first
from switchboard.teams import (
    administered,
    left_behind,
    roster,
)
from todos import fleet, lifecycle, push
from todos.models import PushAttempt, Rule, Schedule, Todo

PUSHES_SHOWN = 20


class VendForm(forms.ModelForm):
    verbs = forms.MultipleChoiceField(
        choices=Verb.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        initial=list(DRAIN_VERBS),
        help_text="The MCP tools the agent may call (the first eight drain a queue;"
        " request_input and reject answer A2A requesters), a2a: requester agents may send"
        " it tasks at /a2a/<slug>, and submit: requesters over MCP (submit_todo, MCP Tasks).",
    )
    # Who owns it: the vending human (blank) or a team they administer.
    owned_by = forms.ChoiceField(required=False, choices=[("", "you")])

    def __init__(self, *args: Any, admin_teams: list[Team] = (), **kwargs: Any) -> None:  # type: ignore[assignment]
        super().__init__(*args, **kwargs)
        field = self.fields["owned_by"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "you"), *((t.name, f"team {t.name}") for t in admin_teams)]
        self.teams = {t.name: t for t in admin_teams}

    class Meta:
        model = Endpoint
        fields = ("name", "slug", "verbs", "push_url")
        help_texts = {
            "slug": "Names the endpoint in its URLs (/mcp/<slug>); it cannot be changed later.",
            "push_url": "Optional: Switchboard POSTs a signed ring here when a queue has work"
            " (docs/guides/push-rings.md).",
        }

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        credentials.validate_slug(slug)  # create_endpoint checks it again; here it shows in place
        return slug

    def clean_push_url(self) -> str:
        return _checked_push_url(self.cleaned_data.get("push_url") or "")


def _checked_push_url(url: str) -> str:
    """``url`` if the sender would post to it (``credentials.check_push_url``), else the form's
    error, naming the setting that allows an inside address."""
    try:
        credentials.check_push_url(url)
    except ValidationError as exc:
        raise ValidationError(exc.message_dict["push_url"]) from None
    return url


class PushUrlForm(forms.Form):
    push_url = forms.URLField(
        required=False,
        max_length=2048,
        assume_scheme="https",
        help_text="Empty: no push rings (the agents wait on MCP subscriptions or poll).",
    )

    def clean_push_url(self) -> str:
        return _checked_push_url(self.cleaned_data.get("push_url") or "")


def _own_endpoint(request: BoardRequest, slug: str) -> Endpoint:
    """The endpoint ``slug`` if the human sees it (its own or its teams'); 404 otherwise. Its
    ``managed`` says, in the same query, whether the human manages it (``_manages``)."""
    scope = Scope.of_human(request.user.id)
    managed = Endpoint.objects.filter(scope.managed(), pk=OuterRef("pk"))
    endpoint = (
        Endpoint.objects.filter(scope.endpoints(), slug=slug)
        .annotate(managed=Exists(managed))
        .select_related("owner", "team")
        .first()
    )
    if endpoint is None:
        raise NotFound("Endpoint", slug, section="endpoints")
    return endpoint


def _manages(request: BoardRequest, endpoint: Endpoint) -> bool:
    """Whether the human manages ``endpoint`` (owns it, or administers its team): only they
    vend and revoke its keys, change its push URL, rotate its push secret, revoke or move it.
    Read with the endpoint (``_own_endpoint``)."""
    return bool(getattr(endpoint, "managed", False))


def _refused(request: BoardRequest, endpoint: Endpoint) -> HttpResponse:
    """A team member's try at an admin's change: said, nothing changed."""
    messages.error(
        request,
        f"Only an admin of team {endpoint.team} vends and revokes keys, revokes connections,"
        f" changes the push URL, rotates the push secret or revokes {endpoint.slug}.",
    )
    return redirect("endpoint_detail", slug=endpoint.slug)


def _admin_teams(request: BoardRequest) -> list[Team]:
    return administered(request.user.id)


KEY_ENV = "SWITCHBOARD_KEY"


def client_config(request: BoardRequest, endpoint: Endpoint, key: str) -> dict[str, str]:
    """Ready-to-copy configuration for an MCP client and an OTLP exporter. Only ``export`` holds
    ``key``; the rest read it from ``$SWITCHBOARD_KEY`` (docs/guides/agents.md)."""
    mcp_url = request.build_absolute_uri(f"/mcp/{endpoint.slug}")
    otlp_url = request.build_absolute_uri(f"/otlp/{endpoint.slug}/v1/traces")
    mcp_json = {
        "mcpServers": {
            "switchboard": {
                "type": "http",
                "url": mcp_url,
                "headers": {"Authorization": f"Bearer ${{{KEY_ENV}}}"},
            }
        }
    }
    return {
        "export": f"export {KEY_ENV}={key}",
        "mcp_url": mcp_url,
        "header": f"Authorization: Bearer ${KEY_ENV}",
        "claude": (
            f"claude mcp add --transport http switchboard {mcp_url} \\\n"
            f'  --header "Authorization: Bearer ${KEY_ENV}"'
        ),
        "mcp_json": json.dumps(mcp_json, indent=2),
        "otlp_env": (
            f"export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT={otlp_url}\n"
            f'export OTEL_EXPORTER_OTLP_TRACES_HEADERS="Authorization=Bearer%20${KEY_ENV}"'
        ),
    }


def _key_minted(
    request: BoardRequest,
    endpoint: Endpoint,
    key: str,
    title: str,
    push_secret: str | None = None,
) -> HttpResponse:
    """Keep the new key (and a new endpoint's push secret) for the page that shows it once, and
    go there (POST-redirect-GET)."""
    stash_shown_once(
        request, "key", slug=endpoint.slug, key=key, title=title, push_secret=push_secret
    )
    return redirect("endpoint_key_shown", slug=endpoint.slug)


@login_required
@require_GET
def endpoint_key_shown(request: BoardRequest, slug: str) -> HttpResponse:
    """The new key, once; a reload (or any later visit) goes to the endpoint's page instead."""
    endpoint = _own_endpoint(request, slug)
    shown = pop_shown_once(request, "key", slug=endpoint.slug)
    if shown is None or not shown.get("key"):
        messages.info(
            request,
            "A key is shown only once. If it was not copied, add a new key and revoke the old.",
        )
        return redirect("endpoint_detail", slug=endpoint.slug)
    key = str(shown["key"])
    response = render(
        request,
        "endpoints/key_shown.html",
        {
            "section": "endpoints",
            "title": shown.get("title") or f"New key for {endpoint.slug}",
            "endpoint": endpoint,
            "key": key,
            "key_env": KEY_ENV,
            "config": client_config(request, endpoint, key),
            "otlp_enabled": settings.SWITCHBOARD_OTLP,
            "push_secret": shown.get("push_secret"),
        },
    )
    return holds_secret(response)


@login_required
@require_GET
def endpoint_list(request: BoardRequest) -> HttpResponse:
    """The human's endpoints, with their live keys and their fleets (two queries for any number)."""
    scope = Scope.of_human(request.user.id)
    endpoints = list(
        Endpoint.objects.filter(scope.endpoints()).annotate(
            live_keys=Count("keys", filter=Q(keys__revoked_at__isnull=True)),
        )
    )
    fleets = fleet.fleet(scope, [endpoint.id for endpoint in endpoints])
    rows = [(endpoint, fleets.get(endpoint.id)) for endpoint in endpoints]
    return render(request, "endpoints/endpoint_list.html", {"section": "endpoints", "rows": rows})


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_new(request: BoardRequest) -> HttpResponse:
    """The vend wizard: name, slug and verbs; answers the first key, shown this once."""
    form = VendForm(request.POST or None, admin_teams=_admin_teams(request))
    if request.method == "POST" and form.is_valid():
        team = form.teams.get(form.cleaned_data["owned_by"])
        try:
            endpoint, _, plaintext = credentials.create_endpoint(
                None if team is not None else request.user,
                team=team,
                name=form.cleaned_data["name"],
                slug=form.cleaned_data["slug"],
                verbs=form.cleaned_data["verbs"],
                push_url=form.cleaned_data["push_url"],
            )
        except ValidationError as exc:  # the slug was taken since the form was checked
            form.add_error(None, exc)
        else:
            return _key_minted(
                request,
                endpoint,
                plaintext,
                f"Endpoint {endpoint.slug} is ready",
                push_secret=endpoint.push_secret or None,
            )
    return render(request, "endpoints/endpoint_new.html", {"section": "endpoints", "form": form})


@login_required
@require_GET
def endpoint_detail(request: BoardRequest, slug: str) -> HttpResponse:
    """One endpoint: its URLs, verbs, fleet and the todos it holds, keys (prefixes only, never
    a key), its last pushes."""
    endpoint = _own_endpoint(request, slug)
    scope = Scope.of_human(request.user.id)
    manages = _manages(request, endpoint)
    keys = EndpointKey.objects.filter(endpoint=endpoint).only(
        "prefix", "created_at", "last_used_at", "revoked_at", "endpoint_id"
    )
    context: dict[str, Any] = {
        "section": "endpoints",
        "endpoint": endpoint,
        "keys": keys,
        "fleet": fleet.fleet(scope, [endpoint.id]).get(endpoint.id),
        "claims": fleet.claims(scope, endpoint.id),
        "claims_shown": fleet.CLAIMS_SHOWN,
        "pushes": PushAttempt.objects.filter(endpoint=endpoint).order_by("-id")[:PUSHES_SHOWN],
        "breaker": push.breaker(endpoint.id) if endpoint.push_url else None,
        "mcp_url": request.build_absolute_uri(f"/mcp/{endpoint.slug}"),
        "otlp_url": request.build_absolute_uri(f"/otlp/{endpoint.slug}/v1/traces"),
        "a2a_url": request.build_absolute_uri(f"/a2a/{endpoint.slug}")
        if endpoint.allows(Verb.A2A)
        else None,
        "manages": manages,
        # The teams it may move into: those the human administers, less its own.
        "move_teams": [t for t in _admin_teams(request) if t.pk != endpoint.team_id]
        if manages and not endpoint.is_revoked
        else [],
        "mcp_oauth_url": request.build_absolute_uri(oauth.resource_path(oauth.MCP, endpoint.slug)),
        "connections": oauth.connections(endpoint),
    }
    return render(request, "endpoints/endpoint_detail.html", context)


@login_required
@require_POST
def endpoint_push_url(request: BoardRequest, slug: str) -> HttpResponse:
    """Change (or remove, empty) the endpoint's push URL, checked with the sender's guard. An
    endpoint given its first push URL gets a push secret, shown once on the next page: so only
    a human who manages the endpoint changes it, as only they rotate the secret."""
    endpoint = _own_endpoint(request, slug)
    if not _manages(request, endpoint):
        return _refused(request, endpoint)
    if endpoint.is_revoked:
        messages.error(request, f"{endpoint.slug} is revoked: its push URL no longer changes.")
        return redirect("endpoint_detail", slug=endpoint.slug)
    form = PushUrlForm(request.POST)
    if not form.is_valid():
        problems = " ".join(str(e) for errors in form.errors.values() for e in errors)
        messages.error(request, f"Push URL not changed: {problems}")
        return redirect("endpoint_detail", slug=endpoint.slug)
    had_secret = bool(endpoint.push_secret)
    url = form.cleaned_data["push_url"] or None
    try:
        credentials.update_endpoint(
            endpoint, name=endpoint.name, verbs=endpoint.verbs, push_url=url
        )
    except ValidationError as exc:
        messages.error(request, f"Push URL not changed: {' '.join(exc.messages)}")
        return redirect("endpoint_detail", slug=endpoint.slug)
    if url and not had_secret:
        # The first push URL minted the secret its rings are signed with: shown this once.
        stash_shown_once(
            request, "push_secret", slug=endpoint.slug, push_secret=endpoint.push_secret
        )
        return redirect("endpoint_rotate_push_secret", slug=endpoint.slug)
    messages.success(
        request,
        f"Push URL of {endpoint.slug}: {url}." if url else f"{endpoint.slug} no longer pushes.",
    )
    return redirect("endpoint_detail", slug=endpoint.slug)


@login_required
@require_POST
def endpoint_revoke_connection(
    request: BoardRequest, slug: str, application_id: int, user_id: int
) -> HttpResponse:
    """Revoke one connection of the endpoint: the grant ``user_id`` gave the OAuth client
    ``application_id`` (others' grants of the same client stay). Its access tokens are deleted
    and its refresh tokens revoked, so its next request is refused (tokens are never cached:
    switchboard/oauth.py). Only a human who manages the endpoint revokes, as only they revoke
    its keys (docs/decisions/0034-teams.md)."""
    endpoint = _own_endpoint(request, slug)
    if not _manages(request, endpoint):
        return _refused(request, endpoint)
    if oauth.revoke_connection(endpoint, application_id, user_id).tokens:
        messages.success(request, "Revoked the connection: its next request is refused.")
    else:
        messages.info(request, "That connection was already gone.")
    return redirect("endpoint_detail", slug=endpoint.slug)


@login_required
@require_POST
def endpoint_mint_key(request: BoardRequest, slug: str) -> HttpResponse:
    """Mint one more key (rotation: revoke the old one once the agents have moved)."""
    endpoint = _own_endpoint(request, slug)
    if not _manages(request, endpoint):
        return _refused(request, endpoint)
    try:
        _, plaintext = credentials.mint_key(endpoint)
    except credentials.EndpointRevoked as exc:
        messages.error(request, str(exc))
        return redirect("endpoint_detail", slug=endpoint.slug)
    return _key_minted(request, endpoint, plaintext, f"New key for {endpoint.slug}")


@login_required
@require_POST
def endpoint_push_test(request: BoardRequest, slug: str) -> HttpResponse:
    """Queue a test push ring; the sweeper sends it (never this request)."""
    endpoint = _own_endpoint(request, slug)
    ring = push.queue_test_push(endpoint.id)
    if ring.outcome == "no_push_url":
        messages.error(
            request, f"{endpoint.slug} has no push URL (or is revoked): nothing to ring."
        )
    elif ring.outcome == "breaker_open":
        messages.error(
            request,
            f"{endpoint.slug}'s circuit breaker is open: nothing is sent to it until it closes"
            " (shown below).",
        )
    elif ring.outcome == "throttled":
        messages.error(
            request,
            f"A test ring was queued less than {push.TEST_RING_EVERY_SECONDS} s ago;"
            " wait for its answer below.",
        )
    else:
        messages.success(
            request,
            "Test ring queued: the sweeper sends it within"
            f" {settings.SWITCHBOARD_SWEEP_INTERVAL_SECONDS} s; its answer appears below.",
        )
    return redirect("endpoint_detail", slug=endpoint.slug)


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_rotate_push_secret(request: BoardRequest, slug: str) -> HttpResponse:
    """Ask first; then mint a new push secret (pushes are signed with it from then on) and show
    it once. A POST without ``confirm=yes`` (the endpoint page's button) shows the question; the
    confirmed POST keeps the secret for the GET it redirects to (POST-redirect-GET), which shows
    it once: a reload shows it no more and rotates nothing."""
    endpoint = _own_endpoint(request, slug)
    if request.method == "GET":
        shown = pop_shown_once(request, "push_secret", slug=endpoint.slug)
        if shown is None or not shown.get("push_secret"):
            messages.info(
                request,
                "A push secret is shown only once. If it was not copied, rotate it again.",
            )
            return redirect("endpoint_detail", slug=endpoint.slug)
        response = render(
            request,
            "endpoints/push_secret_shown.html",
            {"section": "endpoints", "endpoint": endpoint, "push_secret": shown["push_secret"]},
        )
        return holds_secret(response)
    if not _manages(request, endpoint):
        return _refused(request, endpoint)
    if not endpoint.push_url or endpoint.is_revoked:
        messages.error(request, f"{endpoint.slug} has no push URL (or is revoked).")
        return redirect("endpoint_detail", slug=endpoint.slug)
    if not confirmed(request):
        return render(
            request,
            "endpoints/push_secret_rotate.html",
            {
                "section": "endpoints",
                "endpoint": endpoint,
                "current": credentials.push_secret_fingerprint(endpoint.push_secret),
            },
        )
    secret = credentials.rotate_push_secret_if_current(endpoint.id, request.POST.get("current", ""))
    if secret is None:
        messages.info(
            request,
            f"The push secret of {endpoint.slug} was already rotated from this page; a secret is"
            " shown only once. Rotate again if it was lost.",
        )
        return redirect("endpoint_detail", slug=endpoint.slug)
    stash_shown_once(request, "push_secret", slug=endpoint.slug, push_secret=secret)
    return redirect("endpoint_rotate_push_secret", slug=endpoint.slug)


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_revoke_key(request: BoardRequest, slug: str, key_id: int) -> HttpResponse:
    """Ask first; then revoke one key of the endpoint: agents using it get 401 from their next
    request. A POST without ``confirm=yes`` (the key table's button) shows the question."""
    endpoint = _own_endpoint(request, slug)
    key = EndpointKey.objects.filter(endpoint=endpoint, id=key_id).first()
    if key is None:
        raise NotFound(
            "Key", key_id, section="endpoints", why="it is not one of this endpoint's keys"
        )
    if not _manages(request, endpoint):
        return _refused(request, endpoint)
    if not confirmed(request):
        live = EndpointKey.objects.filter(endpoint=endpoint, revoked_at__isnull=True).count()
        return render(
            request,
            "endpoints/key_revoke.html",
            {"section": "endpoints", "endpoint": endpoint, "key": key, "live_keys": live},
        )
    if credentials.revoke_key(key):
        messages.success(request, f"Revoked key {key.prefix}….")
    else:
        messages.info(request, f"Key {key.prefix}… was already revoked.")
    return redirect("endpoint_detail", slug=endpoint.slug)


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_revoke(request: BoardRequest, slug: str) -> HttpResponse:
    """Ask, saying how many todos it dead-letters; on POST revoke through the lifecycle."""
    endpoint = _own_endpoint(request, slug)
    if not _manages(request, endpoint):
        return _refused(request, endpoint)
    if request.method == "POST" and confirmed(request):
        result = lifecycle.revoke_endpoint(request.user.id, endpoint.id)
        if result.endpoint_revoked:
            n = len(result.dead_lettered)
            messages.success(
                request,
                f"Revoked {endpoint.slug}; dead-lettered {n} unfinished"
                f" todo{'' if n == 1 else 's'}.",
            )
        else:
            messages.info(request, f"{endpoint.slug} was already revoked; nothing changed.")
        return redirect("endpoint_detail", slug=endpoint.slug)
    # What revoking dead-letters (todos/sql/_unfinished.sql).
    unfinished = Todo.objects.unfinished().filter(endpoint=endpoint).count()
    return render(
        request,
        "endpoints/endpoint_revoke.html",
        {"section": "endpoints", "endpoint": endpoint, "unfinished": unfinished},
    )


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_move(request: BoardRequest, slug: str) -> HttpResponse:
    """Ask first; then give the endpoint to a team: only a human who manages it and administers
    the team (``credentials.move_endpoint`` refuses anyone else, by name, and changes nothing).
    A GET, or a POST without ``confirm=yes`` (the page's "Move…"), is refused as the move would
    be, or shows what moves and who then sees and manages it: there is no way back to a person
    (docs/decisions/0034-teams.md), so it is said before, not after."""
    endpoint = _own_endpoint(request, slug)
    return move_asked_first(
        request,
        endpoint,
        move=lambda team: credentials.move_endpoint(endpoint, team, by=request.user),
        question=lambda team: render(
            request, "endpoints/endpoint_move.html", _move_question(endpoint, team)
        ),
        moved=lambda team: (
            f"Moved {endpoint.slug} to team {team.name}: its members see its todos now."
        ),
        back=redirect("endpoint_detail", slug=endpoint.slug),
    )


def _move_question(endpoint: Endpoint, team: Team) -> dict[str, Any]:
    """What moving ``endpoint`` into ``team`` takes along and who then reaches it: its keys,
    todos and schedules, the team's members (its admins manage it), and, from another team,
    that team's members who lose it and its sources' rules that stop routing to it (a team's
    source routes to the team's endpoints only)."""
    admins, members = roster(team)
    stranded = 0
    if endpoint.team_id is not None:
        stranded = Rule.objects.filter(endpoint=endpoint, source__team_id=endpoint.team_id).count()
    return {
        "section": "endpoints",
        "endpoint": endpoint,
        "team": team,
        "live_keys": endpoint.keys.filter(revoked_at__isnull=True).count(),
        "todos": Todo.objects.filter(endpoint=endpoint).count(),
        "unfinished": Todo.objects.unfinished().filter(endpoint=endpoint).count(),
        "schedules": Schedule.objects.filter(endpoint=endpoint).count(),
        "admins": admins,
        "members": members,
        "leaving": left_behind(endpoint, team),
        "stranded_rules": stranded,
    }
