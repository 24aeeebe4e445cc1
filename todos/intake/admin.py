"""Admin for webhook sources, routing rules and events.

Events are read-only: they are what intake received. Sources and rules are written only through
``todos.intake.sources``, with the Board's ``RuleForm``, so a source's secret, its verification
and its rules mean here what they mean on the Board. A source's secret is shown once, when it is
generated. Registered when ``todos.admin`` imports this module.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Count, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.http.response import HttpResponseBase
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from switchboard.lib.admin import RefusesUnusableQueries, Shown, adopt, pretty_json, show_once
from todos.intake import routing, sources
from todos.intake.deliveries import plan_for
from todos.intake.forms import RuleForm, RuleTestForm
from todos.models import Event, Rule, SignatureScheme, Source

# The request attribute carrying a source's new secret from save_model to response_add or
# response_change (the hooks of the add and change views that see it), within one request.
_SECRET_MINTED = "_switchboard_source_secret"  # noqa: S105 (a name, not a secret)


# --- sources and rules -------------------------------------------------------------------------


class RuleInlineFormSet(BaseInlineFormSet):
    """Rules on their source's page: RuleForm saves through ``todos.intake.sources``, and so do
    deletions."""

    def delete_existing(self, obj: Rule, commit: bool = True) -> None:
        if commit:
            sources.delete_rule(obj)


class SourceForm(forms.ModelForm):
    class Meta:
        model = Source
        fields = ("owner", "team", "slug", "name", "verify", "scheme")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if "owner" in self.fields and (data.get("owner") is None) == (data.get("team") is None):
            raise forms.ValidationError("Choose an owner or a team, exactly one.")
        return data

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "scheme" in self.fields:  # read-only once the source exists
            self.fields["scheme"].required = False  # GitHub's when not sent

    def clean_scheme(self) -> str:
        return str(self.cleaned_data.get("scheme") or SignatureScheme.GITHUB)

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        sources.validate_slug(slug)  # create_source checks it again; here it shows in place
        return slug


class RuleInline(admin.TabularInline):
    model = Rule
    form = RuleForm
    formset = RuleInlineFormSet
    fields = ("position", "name", "enabled", "endpoint", "queue", "max_attempts")
    autocomplete_fields = ("endpoint",)
    extra = 0
    show_change_link = True  # match and templates are edited on the rule's own page
    ordering = ("position", "id")


@admin.register(Source)
class SourceAdmin(RefusesUnusableQueries, admin.ModelAdmin):
    form = SourceForm
    change_form_template = "admin/todos/source/change_form.html"
    # ``secret`` is not editable and appears nowhere but the show-once page.
    fields = ("owner", "team", "slug", "name", "verify", "scheme", "created_at")
    readonly_fields = ("created_at",)
    list_display = ("slug", "name", "owned_by", "verify", "scheme", "rule_count", "created_at")
    list_select_related = ("owner", "team")
    list_filter = ("verify", "owner", "team")
    search_fields = ("slug", "name", "owner__username", "team__name")
    date_hierarchy = "created_at"
    autocomplete_fields = ("owner", "team")
    inlines = (RuleInline,)
    actions = ("rotate_secrets",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Source]:
        return super().get_queryset(request).annotate(_rules=Count("rules"))

    @admin.display(description="owner")
    def owned_by(self, obj: Source) -> str:
        return obj.owner_label

    @admin.display(description="rules", ordering="_rules")
    def rule_count(self, obj: Source) -> int:
        return obj._rules  # type: ignore[attr-defined]

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "<path:object_id>/rotate-secret/",
                self.admin_site.admin_view(self.rotate_secret_view),
                name="{}_{}_rotate_secret".format(*info),
            ),
            path(
                "<path:object_id>/test-rules/",
                self.admin_site.admin_view(self.test_rules_view),
                name="{}_{}_test_rules".format(*info),
            ),
            *super().get_urls(),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Source | None = None) -> Any:
        if obj is None:
            return self.readonly_fields
        # The slug is the URL its sender posts to; the owner's endpoints are where its rules
        # route. Both are fixed at creation, as on the Board (todos.intake.sources.update_source).
        # The scheme decides the secret's form: fixed at creation too.
        # A source moves into a team with manage.py team move (sources.move_source).
        return (*self.readonly_fields, "owner", "team", "slug", "scheme")

    def save_model(self, request: HttpRequest, obj: Source, form: Any, change: bool) -> None:
        if change:
            sources.update_source(obj, name=obj.name)
            minted = None
            if "verify" in form.changed_data:
                minted = sources.set_verify(obj, obj.verify)
        else:
            # A secret only when verifying, as on the Board and in create_source.
            source, minted = sources.create_source(
                obj.owner,
                obj.slug,
                team=obj.team,
                name=obj.name,
                verify=obj.verify,
                scheme=obj.scheme,
            )
            adopt(obj, source)
        if minted is not None:
            setattr(request, _SECRET_MINTED, minted)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> Any:
        # A source goes with its events (sources.delete_source): they are what it received and
        # mean nothing without it. No one may delete an event on its own (EventAdmin: the
        # retention sweep removes those no todo references), so that refusal is not asked of
        # a source's delete; its rules still need their permission, as any cascade does.
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        perms_needed.discard(Event._meta.verbose_name)
        return deleted, counts, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj: Source) -> None:
        sources.delete_source(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Source]) -> None:
        sources.delete_sources(queryset)

    def response_add(
        self, request: HttpRequest, obj: Source, post_url_continue: str | None = None
    ) -> HttpResponse:
        secret = getattr(request, _SECRET_MINTED, None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        return self._show_secrets(request, f"Source “{obj.slug}” created", [(obj, secret)])

    def response_change(self, request: HttpRequest, obj: Source) -> HttpResponse:
        secret = getattr(request, _SECRET_MINTED, None)
        if secret is None:
            return super().response_change(request, obj)
        return self._show_secrets(request, f"Verification is on for “{obj.slug}”", [(obj, secret)])

    def rotate_secret_view(self, request: HttpRequest, object_id: str) -> HttpResponseBase:
        """Replace a source's secret and verify with it; the sender must be given the new one."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        source = self.get_object(request, object_id)
        if source is None:
            raise Http404("no such source")
        if not self.has_change_permission(request, source):
            raise PermissionDenied
        with transaction.atomic():
            secret = self._rotate(request, source)
        return self._show_secrets(request, f"New secret for “{source.slug}”", [(source, secret)])

    def test_rules_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The rule tester: a payload and headers in, the routing trace out; nothing is created."""
        source = self.get_object(request, object_id)
        if source is None:
            raise Http404("no such source")
        if not self.has_view_permission(request, source):
            raise PermissionDenied
        form = RuleTestForm(request.POST or None)
        plan = None
        if request.method == "POST" and form.is_valid():
            plan = plan_for(
                source,
                routing.stored_headers(form.cleaned_data["headers"]),
                form.cleaned_data["payload"],
            )
        context = {
            **self.admin_site.each_context(request),
            "title": f"Test the rules of “{source.slug}”",
            "opts": self.opts,
            "original": source,
            "form": form,
            "plan": plan,
            "trace_json": None if plan is None else pretty_json(plan.trace),
        }
        return TemplateResponse(request, "admin/todos/source/test_rules.html", context)

    @admin.action(
        description="Generate a new secret for the selected sources", permissions=["change"]
    )
    def rotate_secrets(self, request: HttpRequest, queryset: QuerySet[Source]) -> HttpResponse:
        with transaction.atomic():
            rotated = [(source, self._rotate(request, source)) for source in queryset]
        return self._show_secrets(request, "New secrets", rotated)

    def _rotate(self, request: HttpRequest, source: Source) -> str:
        secret = sources.rotate_secret(source)
        self.log_change(request, source, "Generated a new secret; signatures are verified.")
        return secret

    def _show_secrets(
        self, request: HttpRequest, title: str, shown: list[tuple[Source, str]]
    ) -> HttpResponse:
        items = [
            Shown(
                label=f"Secret for {source.slug}",
                secret=secret,
                hint=_signing_hint(source, request.build_absolute_uri(f"/hooks/{source.slug}")),
            )
            for source, secret in shown
        ]
        links = [
            (f"Go to {source.slug}", reverse("admin:todos_source_change", args=[quote(source.pk)]))
            for source, _ in shown
        ]
        links.append(("All sources", reverse("admin:todos_source_changelist")))
        return show_once(request, self, title=title, items=items, links=links)


@admin.register(Rule)
class RuleAdmin(RefusesUnusableQueries, admin.ModelAdmin):
    form = RuleForm
    list_display = (
        "__str__",
        "source",
        "position",
        "endpoint",
        "queue",
        "max_attempts",
        "enabled",
        "created_at",
    )
    list_select_related = ("source", "endpoint")
    list_filter = ("enabled", "source", "endpoint")
    search_fields = ("name", "queue", "source__slug", "endpoint__slug")
    ordering = ("source__slug", "position", "id")
    autocomplete_fields = ("source", "endpoint")
    fields = (
        "source",
        "position",
        "name",
        "enabled",
        "endpoint",
        "queue",
        "max_attempts",
        "match",
        "title_template",
        "work_order_template",
        "created_at",
    )
    readonly_fields = ("created_at",)

    def save_model(self, request: HttpRequest, obj: Rule, form: Any, change: bool) -> None:
        adopt(obj, form.save())  # RuleForm.save: create_rule or update_rule

    def delete_model(self, request: HttpRequest, obj: Rule) -> None:
        sources.delete_rule(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Rule]) -> None:
        sources.delete_rules(queryset)


# --- events ------------------------------------------------------------------------------------


@admin.register(Event)
class EventAdmin(RefusesUnusableQueries, admin.ModelAdmin):
    list_display = ("id", "source", "received_at", "delivery_id", "disposition", "todo_count")
    list_select_related = ("source",)
    list_filter = ("disposition", "source")
    search_fields = ("=id", "=delivery_id")
    date_hierarchy = "received_at"
    show_full_result_count = False
    fields = (
        "id",
        "source",
        "received_at",
        "delivery_id",
        "disposition",
        "headers_json",
        "verification_json",
        "payload_json",
        "body_size",
        "body_sha256",
        "body_prefix",
        "routing_trace_json",
        "todo_links",
    )
    readonly_fields = fields

    def get_queryset(self, request: HttpRequest) -> QuerySet[Event]:
        return super().get_queryset(request).annotate(_todos=Count("todos"))

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return _EventChangeList

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the retention sweep removes events no todo references

    @admin.display(description="todos", ordering="_todos")
    def todo_count(self, obj: Event) -> int:
        return obj._todos  # type: ignore[attr-defined]

    @admin.display(description="headers")
    def headers_json(self, obj: Event) -> SafeString:
        return pretty_json(obj.headers)

    @admin.display(description="verification")
    def verification_json(self, obj: Event) -> SafeString:
        return pretty_json(obj.verification)

    @admin.display(description="payload")
    def payload_json(self, obj: Event) -> SafeString:
        return pretty_json(obj.payload)

    @admin.display(description="routing trace")
    def routing_trace_json(self, obj: Event) -> SafeString:
        return pretty_json(obj.routing_trace)

    @admin.display(description="todos")
    def todo_links(self, obj: Event) -> SafeString:
        links = format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            (
                (reverse("admin:todos_todo_change", args=[quote(todo_id)]), todo_id)
                for todo_id in obj.todos.values_list("id", flat=True)
            ),
        )
        return links or format_html("{}", "none")


class _EventChangeList(ChangeList):
    """The event list without payloads and headers (the detail page shows them)."""

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        qs = super().get_queryset(request, exclude_parameters)
        return qs.defer("headers", "payload", "verification", "routing_trace")


def _signing_hint(source: Source, url: str) -> str:
    """How a sender signs for ``source``, in its scheme's terms (the Board's secret page says the
    same: templates/sources/secret_shown.html)."""
    if source.scheme == SignatureScheme.STANDARD_WEBHOOKS:
        return (
            f"Give the sender {url} and this secret; each delivery carries webhook-id,"
            " webhook-timestamp and webhook-signature: v1,<base64 HMAC-SHA256 of"
            " id.timestamp.body> (Standard Webhooks)."
        )
    return (
        f"Sign each POST to {url} with HMAC-SHA256 of the raw body: X-Signature-256: sha256=<hex>."
    )
