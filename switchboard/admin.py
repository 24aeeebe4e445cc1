"""Admin for tenancy: humans, endpoints and their keys, runtime settings.

Endpoints and keys are written only through ``switchboard.credentials``, as on the Board: adding
an endpoint mints its first key, editing one changes only its name, verbs and push URL. A key's
plaintext appears once, on the page that minted it (``switchboard.lib.admin.show_once``);
afterwards only the prefix is visible and ``key_hash`` never is. Endpoints are revoked through
``todos.lifecycle``, never deleted: todos hold them by a protecting foreign key and attempts name
them by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.utils import quote
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, Max, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join

from switchboard import credentials, runtime_settings, teams
from switchboard.lib.admin import RefusesUnusableQueries, Shown, adopt, show_once
from switchboard.lib.errors import InvalidInput
from switchboard.models import (
    DRAIN_VERBS,
    Endpoint,
    EndpointKey,
    Human,
    Setting,
    Team,
    TeamMember,
    TeamRole,
    Verb,
)
from switchboard.scope import acting_human
from todos import lifecycle, limits
from todos.states import unfinished_q

# The request attribute that carries a key minted while adding an endpoint from save_model to
# response_add (the only two hooks of the add view that see it), within one request.
_MINTED_ON_ADD = "_switchboard_minted_key"
# And the push secret minted when an endpoint is given its first push URL, added or changed.
_PUSH_MINTED = "_switchboard_minted_push"


# --- humans ------------------------------------------------------------------------------------


class SaysTeamRefusals:
    """Say a refusal of ``switchboard.teams`` (the last admin removed, demoted or deleted with
    their human, a human added twice, a name taken meanwhile) on the page it came from, as the
    admin says a form's error, instead of a bare 403: the writer's reason as an error message,
    then back to the object's page (the add page for an add). The admin's change and delete
    views each run in one transaction, which the refusal rolls back: no row and no log entry is
    written."""

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        try:
            return super().changeform_view(request, object_id, form_url, extra_context)  # type: ignore[misc]
        except teams.TeamRefused as exc:
            return self._refused(request, exc, "Not added" if object_id is None else "Not changed")

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        try:
            return super().delete_view(request, object_id, extra_context)  # type: ignore[misc]
        except teams.TeamRefused as exc:
            back = reverse(f"admin:{self._url_name('change')}", args=[quote(object_id)])
            return self._refused(request, exc, "Not deleted", back)

    def _url_name(self, view: str) -> str:
        meta = self.model._meta  # type: ignore[attr-defined]
        return f"{meta.app_label}_{meta.model_name}_{view}"

    def _refused(
        self, request: HttpRequest, exc: teams.TeamRefused, said: str, back: str | None = None
    ) -> HttpResponse:
        self.message_user(request, f"{said}: {exc.message}.", messages.ERROR)  # type: ignore[attr-defined]
        return redirect(back or request.path)


@admin.register(Human)
class HumanAdmin(SaysTeamRefusals, RefusesUnusableQueries, UserAdmin):
    """Humans, deleted through ``switchboard.teams.delete_humans``: a human who owns an
    endpoint, a source or a channel is protected by it (move or remove those first), and one
    who is a team's last admin by that membership (make another member an admin first), both
    listed on the delete page and the bulk delete's, which then refuse."""

    list_display = (
        "username",
        "email",
        "is_staff",
        "is_superuser",
        "is_active",
        "endpoint_count",
        "last_login",
        "date_joined",
    )
    date_hierarchy = "date_joined"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Human]:
        return super().get_queryset(request).annotate(_endpoints=Count("endpoints"))

    @admin.display(description="endpoints", ordering="_endpoints")
    def endpoint_count(self, obj: Human) -> int:
        return obj._endpoints  # type: ignore[attr-defined]

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        for member, refusal in teams.last_admin_refusals([human.pk for human in objs]):
            url = reverse("admin:switchboard_teammember_change", args=[quote(member.pk)])
            protected.append(
                format_html('Team member: <a href="{}">{}</a>: {}', url, member, refusal.message)
            )
        return deleted, counts, perms_needed, protected

    # A refusal that comes only at the delete (a team's other admin removed meanwhile) goes up
    # to SaysTeamRefusals on the delete page, and is said here for the bulk delete.
    def delete_model(self, request: HttpRequest, obj: Human) -> None:
        teams.delete_humans(Human.objects.filter(pk=obj.pk))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Human]) -> None:
        teams.delete_humans(queryset)

    def response_action(self, request: HttpRequest, queryset: Any, *args: Any) -> Any:
        try:
            with transaction.atomic():  # the log entries roll back with a refused delete
                return super().response_action(request, queryset, *args)
        except teams.TeamRefused as exc:
            self.message_user(request, f"Not deleted: {exc.message}.", messages.ERROR)
            return redirect(request.get_full_path())


# --- endpoints and keys ------------------------------------------------------------------------


class RevokedListFilter(admin.SimpleListFilter):
    """Live or revoked, for anything with a ``revoked_at`` column."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "live"), ("revoked", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "live":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


class EndpointForm(forms.ModelForm):
    # The model's ArrayField would be a comma-separated text box; the verbs are a closed set.
    verbs = forms.MultipleChoiceField(
        choices=Verb.choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        initial=list(DRAIN_VERBS),
        help_text="The MCP tools this endpoint may call (get_todo is implied by list_todos).",
    )

    class Meta:
        model = Endpoint
        fields = ("owner", "team", "slug", "name", "verbs", "push_url", "daily_budget_usd")
        help_texts = {
            "daily_budget_usd": "What its model calls may cost in a UTC day (USD) before every"
            " queue of it pauses until the next day; empty: no budget.",
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "owner" in self.fields and (data.get("owner") is None) == (data.get("team") is None):
            raise forms.ValidationError("Choose an owner or a team, exactly one.")
        return data

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        credentials.validate_slug(slug)  # create_endpoint checks it again; here it shows in place
        return slug

    def clean_push_url(self) -> str | None:
        # The sender's guard, as the vend wizard, the endpoint page and create_endpoint apply
        # it: a URL every ring to would be refused is not stored (nor given a push secret).
        url: str | None = self.cleaned_data.get("push_url") or None
        try:
            credentials.check_push_url(url)
        except ValidationError as exc:
            raise ValidationError(exc.message_dict["push_url"]) from None
        return url

    def clean_daily_budget_usd(self) -> Decimal | None:
        # A queue's daily budget is checked so wherever it is set (limits.check_cost).
        try:
            return limits.check_cost("daily_budget_usd", self.cleaned_data.get("daily_budget_usd"))
        except InvalidInput as exc:
            raise forms.ValidationError(str(exc).split(": ", 1)[1]) from None


class EndpointKeyInline(admin.TabularInline):
    model = EndpointKey
    fields = ("prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True  # the key's own page is where it is revoked
    ordering = ("-created_at",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # keys come only from minting

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Endpoint)
class EndpointAdmin(RefusesUnusableQueries, admin.ModelAdmin):
    form = EndpointForm
    change_form_template = "admin/switchboard/endpoint/change_form.html"
    list_display = (
        "slug",
        "name",
        "owned_by",
        "verbs_display",
        "created_at",
        "revoked_at",
        "live_keys",
        "last_key_use",
    )
    list_select_related = ("owner", "team")
    list_filter = (RevokedListFilter, "owner", "team")
    search_fields = ("slug", "name", "owner__username", "team__name")
    date_hierarchy = "created_at"
    autocomplete_fields = ("owner", "team")
    readonly_fields = ("id", "created_at", "revoked_at")
    inlines = (EndpointKeyInline,)
    actions = ("mint_keys", "revoke_endpoints")

    def get_queryset(self, request: HttpRequest) -> QuerySet[Endpoint]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _live_keys=Count("keys", filter=Q(keys__revoked_at__isnull=True)),
                _last_key_use=Max("keys__last_used_at"),
            )
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Endpoint | None = None) -> Any:
        if obj is None:
            return self.readonly_fields
        # The slug is in every URL an agent was configured with (/mcp/{slug}, /otlp/{slug}/…);
        # renaming it would silently break them. The owner's sources route to it and the owner
        # sees its todos; handing it to someone else would leave both behind. Make a new
        # endpoint instead (credentials.update_endpoint changes neither). An endpoint moves into
        # a team on the Board or with manage.py team move (credentials.move_endpoint).
        return (*self.readonly_fields, "owner", "team", "slug")

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Revoke instead: todos protect their endpoint, attempts name it by id without a
        # constraint, and a revoked endpoint keeps the history readable.
        return False

    @admin.display(description="owner")
    def owned_by(self, obj: Endpoint) -> str:
        return obj.owner_label

    @admin.display(description="verbs")
    def verbs_display(self, obj: Endpoint) -> str:
        if set(obj.verbs) == set(DRAIN_VERBS):
            return "all drain verbs"
        return ", ".join(obj.verbs) or "—"

    @admin.display(description="live keys", ordering="_live_keys")
    def live_keys(self, obj: Endpoint) -> int:
        return obj._live_keys  # type: ignore[attr-defined]

    @admin.display(description="last key use", ordering="_last_key_use")
    def last_key_use(self, obj: Endpoint) -> Any:
        return obj._last_key_use  # type: ignore[attr-defined]

    # Minting ---------------------------------------------------------------------------------

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/mint-key/",
                self.admin_site.admin_view(self.mint_key_view),
                name="{}_{}_mint_key".format(*info),
            ),
            path(
                "<path:object_id>/rotate-push-secret/",
                self.admin_site.admin_view(self.rotate_push_secret_view),
                name="{}_{}_rotate_push_secret".format(*info),
            ),
            *super().get_urls(),
        ]

    def save_model(self, request: HttpRequest, obj: Endpoint, form: Any, change: bool) -> None:
        if change:
            had_push_secret = bool(obj.push_secret)
            credentials.update_endpoint(
                obj,
                name=obj.name,
                verbs=obj.verbs,
                push_url=obj.push_url,
                daily_budget_usd=obj.daily_budget_usd,
            )
            if obj.push_secret and not had_push_secret:
                setattr(request, _PUSH_MINTED, obj.push_secret)
            return
        endpoint, _, plaintext = credentials.create_endpoint(
            obj.owner,
            team=obj.team,
            name=obj.name,
            slug=obj.slug,
            verbs=obj.verbs,
            push_url=obj.push_url,
            daily_budget_usd=obj.daily_budget_usd,
        )
        adopt(obj, endpoint)
        setattr(request, _MINTED_ON_ADD, plaintext)
        if endpoint.push_secret:
            setattr(request, _PUSH_MINTED, endpoint.push_secret)

    def response_add(
        self, request: HttpRequest, obj: Endpoint, post_url_continue: str | None = None
    ) -> HttpResponse:
        plaintext = getattr(request, _MINTED_ON_ADD, None)
        if plaintext is None:
            return super().response_add(request, obj, post_url_continue)
        push_secret = getattr(request, _PUSH_MINTED, None)
        return self._show_keys(
            request,
            f"Endpoint “{obj.slug}” created",
            [(obj, plaintext)],
            also=[_push_secret_shown(obj, push_secret, rotated=False)] if push_secret else [],
            kept=_KEY_AND_PUSH_KEPT if push_secret else "",
        )

    def response_change(self, request: HttpRequest, obj: Endpoint) -> HttpResponse:
        push_secret = getattr(request, _PUSH_MINTED, None)
        if push_secret is None:
            return super().response_change(request, obj)
        # Its first push URL minted its push secret: this response is the one that shows it.
        self.message_user(request, f"The endpoint “{obj.slug}” was changed successfully.")
        return self._show_push_secret(
            request, f"Push secret for “{obj.slug}”", obj, push_secret, rotated=False
        )

    def _posted_endpoint(self, request: HttpRequest, object_id: str) -> Endpoint | None:
        """The endpoint an object tool's POST acts on, checked as the change page checks it;
        None for a method other than POST (answer 405)."""
        if request.method != "POST":
            return None
        endpoint = self.get_object(request, object_id)
        if endpoint is None:
            raise Http404("no such endpoint")
        if not self.has_change_permission(request, endpoint):
            raise PermissionDenied
        return endpoint

    def mint_key_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        """Mint one more key for an endpoint (rotation: revoke the old one once agents moved)."""
        endpoint = self._posted_endpoint(request, object_id)
        if endpoint is None:
            return HttpResponseNotAllowed(["POST"])
        try:
            with transaction.atomic():
                key, plaintext = credentials.mint_key(endpoint)
                self.log_change(request, endpoint, f"Minted key {key.prefix}…")
        except credentials.EndpointRevoked as exc:
            self.message_user(request, str(exc), messages.ERROR)
            return redirect(reverse("admin:switchboard_endpoint_change", args=[quote(endpoint.pk)]))
        return self._show_keys(request, f"New key for “{endpoint.slug}”", [(endpoint, plaintext)])

    # The push secret ----------------------------------------------------------------------------

    def rotate_push_secret_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        """Ask first, then give the endpoint a new push secret and show it once, as the Board's
        endpoint page does (``credentials.rotate_push_secret_if_current``): the question carries
        the current secret's fingerprint, so the answer sent again (a reload of the page that
        shows the secret) rotates nothing and shows nothing."""
        endpoint = self._posted_endpoint(request, object_id)
        if endpoint is None:
            return HttpResponseNotAllowed(["POST"])
        back = redirect(reverse("admin:switchboard_endpoint_change", args=[quote(endpoint.pk)]))
        if not endpoint.push_url or endpoint.is_revoked:
            self.message_user(
                request,
                f"{endpoint.slug} has no push URL (or is revoked): it has no push secret to"
                " rotate.",
                messages.ERROR,
            )
            return back
        if request.POST.get("post") != "yes":
            context = {
                **self.admin_site.each_context(request),
                "title": f"Rotate the push secret of “{endpoint.slug}”",
                "opts": self.opts,
                "original": endpoint,
                "current": credentials.push_secret_fingerprint(endpoint.push_secret),
            }
            return TemplateResponse(
                request, "admin/switchboard/endpoint/rotate_push_secret_confirmation.html", context
            )
        with transaction.atomic():
            secret = credentials.rotate_push_secret_if_current(
                endpoint.id, request.POST.get("current", "")
            )
            if secret is not None:
                self.log_change(request, endpoint, "Rotated the push secret.")
        if secret is None:
            self.message_user(
                request,
                f"The push secret of {endpoint.slug} was already rotated from this page; a secret"
                " is shown only once. Rotate again if it was lost.",
                messages.INFO,
            )
            return back
        return self._show_push_secret(
            request, f"New push secret for “{endpoint.slug}”", endpoint, secret, rotated=True
        )

    def _show_push_secret(
        self, request: HttpRequest, title: str, endpoint: Endpoint, secret: str, *, rotated: bool
    ) -> HttpResponse:
        item = _push_secret_shown(endpoint, secret, rotated=rotated)
        links = [
            (
                f"Go to {endpoint.slug}",
                reverse("admin:switchboard_endpoint_change", args=[quote(endpoint.pk)]),
            ),
            ("All endpoints", reverse("admin:switchboard_endpoint_changelist")),
        ]
        return show_once(request, self, title=title, items=[item], links=links, kept=_PUSH_KEPT)

    @admin.action(description="Mint a new key for the selected endpoints", permissions=["change"])
    def mint_keys(self, request: HttpRequest, queryset: QuerySet[Endpoint]) -> HttpResponse | None:
        minted: list[tuple[Endpoint, str]] = []
        with transaction.atomic():
            for endpoint in queryset:
                try:
                    key, plaintext = credentials.mint_key(endpoint)
                except credentials.EndpointRevoked:
                    self.message_user(
                        request, f"{endpoint.slug} is revoked; no key minted.", messages.WARNING
                    )
                    continue
                self.log_change(request, endpoint, f"Minted key {key.prefix}…")
                minted.append((endpoint, plaintext))
        if not minted:
            return None
        return self._show_keys(request, "New keys", minted)

    def _show_keys(
        self,
        request: HttpRequest,
        title: str,
        minted: list[tuple[Endpoint, str]],
        *,
        also: Sequence[Shown] = (),
        kept: str = "",
    ) -> HttpResponse:
        items = [
            Shown(
                label=f"Key for {endpoint.slug}",
                secret=plaintext,
                hint=(
                    f"Send it as “Authorization: Bearer …” to "
                    f"{request.build_absolute_uri(f'/mcp/{endpoint.slug}')}"
                ),
            )
            for endpoint, plaintext in minted
        ]
        items.extend(also)
        links = [
            (
                f"Go to {endpoint.slug}",
                reverse("admin:switchboard_endpoint_change", args=[quote(endpoint.pk)]),
            )
            for endpoint, _ in minted
        ]
        links.append(("All endpoints", reverse("admin:switchboard_endpoint_changelist")))
        return show_once(request, self, title=title, items=items, links=links, kept=kept)

    # Revocation ------------------------------------------------------------------------------

    @admin.action(
        description="Revoke the selected endpoints (dead-letters their unfinished todos)",
        permissions=["change"],
    )
    def revoke_endpoints(
        self, request: HttpRequest, queryset: QuerySet[Endpoint]
    ) -> TemplateResponse | None:
        if request.POST.get("post") != "yes":
            endpoints = queryset.filter(revoked_at__isnull=True).annotate(
                unfinished=Count("todos", filter=unfinished_q("todos__"), distinct=True)
            )
            if not endpoints:
                self.message_user(request, "The selected endpoints are already revoked.")
                return None
            context = {
                **self.admin_site.each_context(request),
                "title": "Revoke endpoints",
                "opts": self.opts,
                "endpoints": endpoints,
                "action_checkbox_name": ACTION_CHECKBOX_NAME,
            }
            return TemplateResponse(
                request, "admin/switchboard/endpoint/revoke_confirmation.html", context
            )
        for endpoint in queryset:
            # Each revocation is its own statement and transaction (lifecycle.revoke_endpoint),
            # acting as the endpoint's owner: the transition is scoped to the owning human (for
            # a team's endpoint, one of its admins).
            human = acting_human(endpoint.owner_id, endpoint.team_id)
            result = lifecycle.revoke_endpoint(human or 0, endpoint.id)
            if result.endpoint_revoked:
                n = len(result.dead_lettered)
                self.log_change(request, endpoint, f"Revoked; dead-lettered {n} todos.")
                self.message_user(
                    request,
                    f"Revoked {endpoint.slug}; dead-lettered {n} unfinished todo"
                    f"{'' if n == 1 else 's'}.",
                    messages.SUCCESS,
                )
            else:
                self.message_user(
                    request, f"{endpoint.slug} was already revoked; nothing changed.", messages.INFO
                )
        return None


# How the show-once page says a push secret is kept: the server signs with it, so it is stored
# as it is (docs/guides/push-rings.md), and no page renders it again.
_PUSH_KEPT = "the server keeps it only to sign push rings with, and no page shows it again"
_KEY_AND_PUSH_KEPT = (
    "of the key only a short prefix is stored in a form that can be read back; the push secret"
    " the server keeps only to sign push rings with, and no page shows it again"
)


def _push_secret_shown(endpoint: Endpoint, secret: str, *, rotated: bool) -> Shown:
    signed = "from the next one on; the old secret no longer verifies them" if rotated else ""
    return Shown(
        label=f"Push secret for {endpoint.slug}",
        secret=secret,
        hint=(
            f"Push rings POSTed to {endpoint.push_url} carry Switchboard-Signature, an"
            f" HMAC-SHA256 under this secret{', ' + signed if signed else ''}"
            " (docs/guides/push-rings.md)."
        ),
    )


@admin.register(EndpointKey)
class EndpointKeyAdmin(RefusesUnusableQueries, admin.ModelAdmin):
    # key_hash is left out of every list, form and search: a hash of a high-entropy key is not
    # reversible, but it is the lookup handle and has no business on a page.
    fields = ("endpoint", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = fields
    list_display = ("prefix", "endpoint", "owner", "created_at", "last_used_at", "revoked_at")
    list_select_related = ("endpoint__owner", "endpoint__team")
    list_filter = (RevokedListFilter, "endpoint")
    search_fields = ("prefix", "endpoint__slug")
    date_hierarchy = "created_at"
    actions = ("revoke_keys",)

    @admin.display(description="owner", ordering="endpoint__owner__username")
    def owner(self, obj: EndpointKey) -> str:
        return obj.endpoint.owner_label

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # keys come only from minting, on the endpoint's page

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # nothing about a key is editable; it is only ever revoked

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # revoked keys stay, so "which key was used when" remains answerable

    def has_revoke_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("switchboard.change_endpointkey")

    @admin.action(description="Revoke the selected keys", permissions=["revoke"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[EndpointKey]) -> None:
        n = credentials.revoke_keys(queryset)
        self.message_user(request, f"Revoked {n} key{'' if n == 1 else 's'}.", messages.SUCCESS)


# --- runtime settings --------------------------------------------------------------------------


def _setting_choices() -> list[tuple[str, str]]:
    return [(name, name) for name in sorted(runtime_settings.FIELDS)]


def _settings_help() -> str:
    rows = format_html_join(
        "",
        "<li><code>{}</code> ({}; {} to {}): {}</li>",
        (
            (
                name,
                f"default {spec.default}",
                spec.metadata["min"],
                spec.metadata["max"],
                spec.metadata["help"],
            )
            for name, spec in sorted(runtime_settings.FIELDS.items())
        ),
    )
    return format_html("<ul>{}</ul>", rows)


# --- teams ----------------------------------------------------------------------------------
# Written through switchboard.teams only, as on the Board and in manage.py team: a team is
# created with its first admin; a membership is added, re-roled or removed there, so adding a
# human twice and removing or demoting the last admin are refused with the same reason here.


class TeamForm(forms.ModelForm):
    first_admin = forms.ModelChoiceField(
        queryset=Human.objects.all(), help_text="The team's first admin."
    )

    class Meta:
        model = Team
        fields = ("name",)


class TeamMemberInline(admin.TabularInline):
    model = TeamMember
    fields = ("human", "role", "created_at")
    readonly_fields = fields
    extra = 0
    max_num = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # memberships are added on their own page, through switchboard.teams

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # and re-roled there


@admin.register(Team)
class TeamAdmin(SaysTeamRefusals, RefusesUnusableQueries, admin.ModelAdmin):
    form = TeamForm
    list_display = ("name", "member_count", "created_at")
    search_fields = ("name",)
    readonly_fields = ("created_at",)
    inlines = (TeamMemberInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Team]:
        return super().get_queryset(request).annotate(_members=Count("memberships"))

    def get_fields(self, request: HttpRequest, obj: Team | None = None) -> Any:
        return ("name", "first_admin") if obj is None else ("name", "created_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Team | None = None) -> Any:
        # A team's name is fixed once made, like an endpoint's slug.
        return self.readonly_fields if obj is None else ("name", "created_at")

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any):  # type: ignore[no-untyped-def]
        if obj is not None:
            kwargs["form"] = forms.ModelForm
        return super().get_form(request, obj, change, **kwargs)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # what a team owns protects it; move those first

    @admin.display(description="members", ordering="_members")
    def member_count(self, obj: Team) -> int:
        return obj._members  # type: ignore[attr-defined]

    def save_model(self, request: HttpRequest, obj: Team, form: Any, change: bool) -> None:
        if change:
            return  # nothing on a team's own row changes
        # A refusal goes up to SaysTeamRefusals, which says it and rolls the view back.
        adopt(obj, teams.create_team(obj.name, form.cleaned_data["first_admin"]))


class TeamMemberForm(forms.ModelForm):
    class Meta:
        model = TeamMember
        fields = ("team", "human", "role")

    # A human added twice is said in switchboard.teams.add_member's own words (save_model, then
    # SaysTeamRefusals), not by the model's unique constraint; the role's CHECK is its choices.
    def validate_unique(self) -> None:
        pass

    def validate_constraints(self) -> None:
        pass


@admin.register(TeamMember)
class TeamMemberAdmin(SaysTeamRefusals, RefusesUnusableQueries, admin.ModelAdmin):
    form = TeamMemberForm
    list_display = ("human", "team", "role", "created_at")
    list_select_related = ("human", "team")
    list_filter = ("role", "team")
    search_fields = ("human__username", "team__name")
    autocomplete_fields = ("human", "team")
    actions = None

    def get_readonly_fields(self, request: HttpRequest, obj: TeamMember | None = None) -> Any:
        return () if obj is None else ("team", "human", "created_at")

    def save_model(self, request: HttpRequest, obj: TeamMember, form: Any, change: bool) -> None:
        # A refusal goes up to SaysTeamRefusals, which says it and rolls the view back.
        admin_role = obj.role == TeamRole.ADMIN
        if change:
            saved = teams.set_role(obj.team, obj.human, admin=admin_role)
        else:
            saved = teams.add_member(obj.team, obj.human, admin=admin_role)
        adopt(obj, saved)

    def delete_model(self, request: HttpRequest, obj: TeamMember) -> None:
        teams.remove_member(obj.team, obj.human)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[TeamMember]) -> None:
        for member in queryset.select_related("team", "human"):
            self.delete_model(request, member)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is not None and super().has_delete_permission(request, obj)


class SettingForm(forms.ModelForm):
    class Meta:
        model = Setting
        fields = ("key", "value")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        key = cleaned.get("key", self.instance.key)
        if key and "value" in cleaned:
            try:
                cleaned["value"] = runtime_settings.validate(key, cleaned["value"])
            except runtime_settings.InvalidSetting as exc:
                self.add_error("value", str(exc))
        return cleaned


@admin.register(Setting)
class SettingAdmin(RefusesUnusableQueries, admin.ModelAdmin):
    form = SettingForm
    list_display = ("key", "value", "default", "allowed", "help", "updated_at")
    search_fields = ("key",)
    readonly_fields = ("default", "allowed", "help", "updated_at")

    def get_fields(self, request: HttpRequest, obj: Setting | None = None) -> Any:
        if obj is None:
            return ("key", "value")
        return ("key", "value", "default", "allowed", "help", "updated_at")

    def get_readonly_fields(self, request: HttpRequest, obj: Setting | None = None) -> Any:
        # The key is the primary key: editing it would make a new row, not rename this one.
        return (*self.readonly_fields, "key") if obj is not None else self.readonly_fields

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "key":
            return forms.ChoiceField(
                choices=_setting_choices(), label="Setting", help_text=_settings_help()
            )
        if db_field.name == "value":
            # Every setting is an integer today; JSON keeps the column open to other types.
            return forms.JSONField(
                widget=forms.TextInput, help_text="A JSON value, e.g. 60.", label="Value"
            )
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def _spec(self, obj: Setting) -> Any:
        return runtime_settings.FIELDS.get(obj.key)

    @admin.display(description="default")
    def default(self, obj: Setting) -> Any:
        spec = self._spec(obj)
        return "(unknown setting: ignored)" if spec is None else spec.default

    @admin.display(description="allowed")
    def allowed(self, obj: Setting) -> str:
        spec = self._spec(obj)
        return "—" if spec is None else f"{spec.metadata['min']} to {spec.metadata['max']}"

    @admin.display(description="help")
    def help(self, obj: Setting) -> str:
        spec = self._spec(obj)
        return "" if spec is None else spec.metadata["help"]

    # The model's post_save/post_delete signals clear this process's cache at once; clearing
    # again after commit stops a read made in the meantime (which saw the old row) from being
    # cached for a whole TTL.
    def save_model(self, request: HttpRequest, obj: Setting, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        transaction.on_commit(runtime_settings.clear_cache)

    def delete_model(self, request: HttpRequest, obj: Setting) -> None:
        super().delete_model(request, obj)
        transaction.on_commit(runtime_settings.clear_cache)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Setting]) -> None:
        super().delete_queryset(request, queryset)
        transaction.on_commit(runtime_settings.clear_cache)


# --- OAuth (switchboard/oauth.py): read-only ----------------------------------------------------
# Clients register themselves (metadata documents, DCR) and operators grant them on the Board's
# consent page; a grant is revoked on the endpoint's page or with `manage.py oauth revoke`. The
# admin only shows applications, grants and tokens (their checksums and never a token).


class _ReadOnly:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def _read_only_oauth_admin() -> None:
    from oauth2_provider import admin as dot_admin
    from oauth2_provider import models as dot_models

    pairs = [
        (dot_models.Application, dot_admin.ApplicationAdmin),
        (dot_models.Grant, dot_admin.GrantAdmin),
        (dot_models.AccessToken, dot_admin.AccessTokenAdmin),
        (dot_models.RefreshToken, dot_admin.RefreshTokenAdmin),
        (dot_models.IDToken, dot_admin.IDTokenAdmin),
    ]
    for model, base in pairs:
        if admin.site.is_registered(model):
            admin.site.unregister(model)
        read_only = type(f"ReadOnly{base.__name__}", (_ReadOnly, base), {"actions": None})
        admin.site.register(model, read_only)


_read_only_oauth_admin()
