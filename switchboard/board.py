"""The Board's endpoint pages: the list, the vend wizard, keys, push rings, and revocation.

A key's plaintext exists only in the response that mints it (as in the admin,
``switchboard.lib.admin``): it is rendered into that page's body, never into a message, a log
line or a redirect, and the page is never cached. Every read here is scoped to the endpoints the
logged-in human owns; another human's slug answers 404 exactly like an unknown one. Endpoints
and keys are written only through ``switchboard.credentials``, as in the admin and the commands.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db.models import Count, Max, Q
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from switchboard import credentials
from switchboard.lib.board import BoardRequest, holds_secret, login_required
from switchboard.models import DRAIN_VERBS, Endpoint, EndpointKey, Verb
from switchboard.scope import Scope
from todos import lifecycle, push
from todos.models import PushAttempt, Todo

PUSHES_SHOWN = 20


class VendForm(forms.ModelForm):
    verbs = forms.MultipleChoiceField(
        choices=Verb.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        initial=list(DRAIN_VERBS),
        help_text="The MCP tools the agent may call (the first eight drain a queue;"
        " request_input and reject answer A2A requesters), and a2a: requester agents may send"
        " it tasks at /a2a/<slug>.",
    )

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


def _own_endpoint(request: BoardRequest, slug: str) -> Endpoint:
    endpoint = Endpoint.objects.filter(
        Scope.of_human(request.user.id).endpoints(), slug=slug
    ).first()
    if endpoint is None:
        raise Http404("no such endpoint")
    return endpoint


def client_config(request: BoardRequest, endpoint: Endpoint, key: str) -> dict[str, str]:
    """Ready-to-copy configuration for an MCP client and an OTLP exporter, with ``key`` in it."""
    mcp_url = request.build_absolute_uri(f"/mcp/{endpoint.slug}")
    otlp_url = request.build_absolute_uri(f"/otlp/{endpoint.slug}/v1/traces")
    mcp_json = {
        "mcpServers": {
            "switchboard": {
                "type": "http",
                "url": mcp_url,
                "headers": {"Authorization": f"Bearer {key}"},
            }
        }
    }
    return {
        "mcp_url": mcp_url,
        "header": f"Authorization: Bearer {key}",
        "claude": (
            f"claude mcp add --transport http switchboard {mcp_url} \\\n"
            f'  --header "Authorization: Bearer {key}"'
        ),
        "mcp_json": json.dumps(mcp_json, indent=2),
        "otlp_env": (
            f"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT={otlp_url}\n"
            f"OTEL_EXPORTER_OTLP_TRACES_HEADERS=Authorization=Bearer%20{key}"
        ),
    }


def _show_key(
    request: BoardRequest,
    endpoint: Endpoint,
    key: str,
    title: str,
    push_secret: str | None = None,
) -> HttpResponse:
    response = render(
        request,
        "endpoints/key_shown.html",
        {
            "section": "endpoints",
            "title": title,
            "endpoint": endpoint,
            "key": key,
            "config": client_config(request, endpoint, key),
            "otlp_enabled": settings.SWITCHBOARD_OTLP,
            "push_secret": push_secret,
        },
    )
    return holds_secret(response)


@login_required
@require_GET
def endpoint_list(request: BoardRequest) -> HttpResponse:
    """The human's endpoints, with their live keys and the last time any key was used."""
    endpoints = Endpoint.objects.filter(Scope.of_human(request.user.id).endpoints()).annotate(
        live_keys=Count("keys", filter=Q(keys__revoked_at__isnull=True)),
        last_key_use=Max("keys__last_used_at"),
    )
    return render(
        request, "endpoints/endpoint_list.html", {"section": "endpoints", "endpoints": endpoints}
    )


@login_required
@require_http_methods(["GET", "POST"])
def endpoint_new(request: BoardRequest) -> HttpResponse:
    """The vend wizard: name, slug and verbs; answers the first key, shown this once."""
    form = VendForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint, _, plaintext = credentials.create_endpoint(
                request.user,
                name=form.cleaned_data["name"],
                slug=form.cleaned_data["slug"],
                verbs=form.cleaned_data["verbs"],
                push_url=form.cleaned_data["push_url"],
            )
        except ValidationError as exc:  # the slug was taken since the form was checked
            form.add_error(None, exc)
        else:
            return _show_key(
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
    """One endpoint: its URLs, verbs and keys (prefixes only, never a key), its last pushes."""
    endpoint = _own_endpoint(request, slug)
    keys = EndpointKey.objects.filter(endpoint=endpoint).only(
        "prefix", "created_at", "last_used_at", "revoked_at", "endpoint_id"
    )
    context: dict[str, Any] = {
        "section": "endpoints",
        "endpoint": endpoint,
        "keys": keys,
        "pushes": PushAttempt.objects.filter(endpoint=endpoint).order_by("-id")[:PUSHES_SHOWN],
        "breaker": push.breaker(endpoint.id) if endpoint.push_url else None,
        "mcp_url": request.build_absolute_uri(f"/mcp/{endpoint.slug}"),
        "otlp_url": request.build_absolute_uri(f"/otlp/{endpoint.slug}/v1/traces"),
        "a2a_url": request.build_absolute_uri(f"/a2a/{endpoint.slug}")
        if endpoint.allows(Verb.A2A)
        else None,
    }
    return render(request, "endpoints/endpoint_detail.html", context)


@login_required
@require_POST
def endpoint_mint_key(request: BoardRequest, slug: str) -> HttpResponse:
    """Mint one more key (rotation: revoke the old one once the agents have moved)."""
    endpoint = _own_endpoint(request, slug)
    try:
        _, plaintext = credentials.mint_key(endpoint)
    except credentials.EndpointRevoked as exc:
        messages.error(request, str(exc))
        return redirect("endpoint_detail", slug=endpoint.slug)
    return _show_key(request, endpoint, plaintext, f"New key for {endpoint.slug}")


@login_required
@require_POST
def endpoint_push_test(request: BoardRequest, slug: str) -> HttpResponse:
    """Queue a test push ring; the sweeper sends it (never this request)."""
    endpoint = _own_endpoint(request, slug)
    if lifecycle.queue_test_push(endpoint.id) is None:
        messages.error(
            request, f"{endpoint.slug} has no push URL (or is revoked): nothing to ring."
        )
    else:
        messages.success(
            request,
            "Test ring queued: the sweeper sends it within"
            f" {settings.SWITCHBOARD_SWEEP_INTERVAL_SECONDS} s; its answer appears below.",
        )
    return redirect("endpoint_detail", slug=endpoint.slug)


@login_required
@require_POST
def endpoint_rotate_push_secret(request: BoardRequest, slug: str) -> HttpResponse:
    """Mint a new push secret and show it this once; pushes are signed with it from now on."""
    endpoint = _own_endpoint(request, slug)
    if not endpoint.push_url or endpoint.is_revoked:
        messages.error(request, f"{endpoint.slug} has no push URL (or is revoked).")
        return redirect("endpoint_detail", slug=endpoint.slug)
    secret = credentials.rotate_push_secret(endpoint)
    response = render(
        request,
        "endpoints/push_secret_shown.html",
        {"section": "endpoints", "endpoint": endpoint, "push_secret": secret},
    )
    return holds_secret(response)


@login_required
@require_POST
def endpoint_revoke_key(request: BoardRequest, slug: str, key_id: int) -> HttpResponse:
    """Revoke one key of the endpoint; agents using it get 401 from their next request."""
    endpoint = _own_endpoint(request, slug)
    key = EndpointKey.objects.filter(endpoint=endpoint, id=key_id).first()
    if key is None:
        raise Http404("no such key")
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
    if request.method == "POST":
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
