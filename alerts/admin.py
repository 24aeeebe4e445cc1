"""Admin for alerts: channels (a human's or a team's) and their rules through
``alerts.channels`` (its checks: the SSRF guard, the owner's endpoints), a new webhook channel's
signing secret shown once; the alerts and their messages read-only, as the sweeper wrote them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.forms import BaseInlineFormSet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from alerts import channels
from alerts.models import Alert, AlertChannel, AlertDelivery, AlertRule, ChannelKind
from switchboard.lib.admin import Shown, adopt, show_once
from switchboard.lib.errors import InvalidInput

_SECRET_ON_ADD = "_switchboard_alert_secret"  # noqa: S105 (a request attribute name)


class RuleForm(forms.ModelForm):
    """A rule on its channel's page, saved through ``alerts.channels``."""

    class Meta:
        model = AlertRule
        fields: tuple[str, ...] = (
            "kind",
            "endpoint",
            "queue",
            "threshold",
            "for_seconds",
            "enabled",
        )

    def clean_queue(self) -> str | None:
        return self.cleaned_data.get("queue") or None  # empty: every queue

    def save(self, commit: bool = True) -> AlertRule:
        rule: AlertRule = super().save(commit=False)
        if commit:
            channels.save_rule(rule)
        return rule


class RuleFormSet(BaseInlineFormSet):
    """The channel's rules, each checked for the channel's owner; deletions through the writer."""

    def delete_existing(self, obj: AlertRule, commit: bool = True) -> None:
        if commit:
            channels.remove_rule(obj)

    def clean(self) -> None:
        super().clean()
        channel = self.instance
        owned = channel.owner_id is not None or channel.team_id is not None
        for form in self.forms:
            if not form.cleaned_data or form.cleaned_data.get("DELETE") or not owned:
                continue
            try:
                channels.check_rule(form.instance, channel)
            except InvalidInput as exc:
                form.add_error(exc.field if exc.field in form.fields else None, str(exc))


class RuleInline(admin.TabularInline):
    model = AlertRule
    form = RuleForm
    formset = RuleFormSet
    extra = 0
    fields = ("kind", "endpoint", "queue", "threshold", "for_seconds", "enabled")


class ChannelForm(forms.ModelForm):
    class Meta:
        model = AlertChannel
        fields = ("owner", "team", "kind", "name", "url", "email", "enabled")

    def clean(self) -> dict[str, Any]:
        """Each value checked as ``alerts.channels`` checks it when saving, the refusal on its
        field: the target by the channel's kind, which is the form's on add and the channel's
        own on edit (read-only there, so not in the data)."""
        data = super().clean() or {}
        if "owner" in self.fields and (data.get("owner") is None) == (data.get("team") is None):
            raise forms.ValidationError("Choose an owner or a team, exactly one.")
        kind = data.get("kind") if "kind" in self.fields else self.instance.kind
        for field, check in (
            ("name", channels.check_name),
            ("url", channels.check_url if kind == ChannelKind.WEBHOOK else None),
            ("email", channels.check_email if kind == ChannelKind.EMAIL else None),
        ):
            if check is None or field not in data:
                continue
            try:
                data[field] = check(data[field] or "")
            except InvalidInput as exc:
                self.add_error(field, str(exc))
        return data


@admin.register(AlertChannel)
class AlertChannelAdmin(admin.ModelAdmin):
    form = ChannelForm
    list_display = ("__str__", "kind", "owned_by", "enabled", "created_at")
    list_select_related = ("owner", "team")
    list_filter = ("kind", "enabled", "team")
    search_fields = ("name", "url", "email", "owner__username", "team__name")
    inlines = [RuleInline]
    readonly_fields = ("id", "created_at")

    @admin.display(description="owner")
    def owned_by(self, obj: AlertChannel) -> str:
        return obj.owner_label

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # The kind and owner are fixed once made: the secret and the rules depend on them. A
        # channel moves into a team with manage.py alert channel move (channels.move_channel).
        if obj is None:
            return ("id", "created_at")
        return ("id", "created_at", "owner", "team", "kind")

    def save_model(self, request: HttpRequest, obj: AlertChannel, form: Any, change: bool) -> None:
        data = form.cleaned_data
        if change:
            channels.update_channel(
                obj,
                name=data.get("name", ""),
                url=data.get("url") if obj.kind == ChannelKind.WEBHOOK else None,
                email=data.get("email") if obj.kind == ChannelKind.EMAIL else None,
                enabled=data.get("enabled"),
            )
            return
        webhook = data.get("url") if data["kind"] == ChannelKind.WEBHOOK else None
        email = data.get("email") if data["kind"] == ChannelKind.EMAIL else None
        saved, secret = channels.add_channel(
            data.get("owner"),
            team=data.get("team"),
            webhook=webhook,
            email=email,
            name=data.get("name", ""),
        )
        saved.enabled = bool(data.get("enabled", True))
        if not saved.enabled:
            channels.update_channel(saved, enabled=False)
        adopt(obj, saved)
        setattr(request, _SECRET_ON_ADD, secret)

    def delete_model(self, request: HttpRequest, obj: AlertChannel) -> None:
        channels.remove_channel(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AlertChannel]) -> None:
        for channel in queryset:
            channels.remove_channel(channel)

    def response_add(
        self, request: HttpRequest, obj: AlertChannel, post_url_continue: str | None = None
    ) -> HttpResponse:
        secret = getattr(request, _SECRET_ON_ADD, None)
        if not secret:
            return super().response_add(request, obj, post_url_continue)
        messages.success(request, f"Alert channel {obj} added with the default rules.")
        return show_once(
            request,
            self,
            title=f"Signing secret of {obj}",
            items=[
                Shown(
                    "Webhook signing secret (Standard Webhooks)",
                    secret,
                    "Verify webhook-signature with it; it is not shown again.",
                )
            ],
            links=[
                ("The channel", reverse("admin:alerts_alertchannel_change", args=[obj.pk])),
                ("All channels", reverse("admin:alerts_alertchannel_changelist")),
            ],
        )

    @admin.action(description="Send a test alert to the selected channels")
    def send_test(self, request: HttpRequest, queryset: QuerySet[AlertChannel]) -> None:
        # The Board's button, the same refusals: disabled, breaker open, or a test just sent.
        outcomes = [channels.queue_test(channel).outcome for channel in queryset]
        queued = outcomes.count("queued")
        messages.success(request, f"Test alerts queued for {queued} channel(s).")
        if refused := len(outcomes) - queued:
            messages.warning(
                request,
                f"{refused} channel(s) refused a test: disabled, circuit breaker open, or a test"
                f" queued less than {channels.TEST_EVERY_SECONDS} s ago.",
            )

    actions = ["send_test"]


class RuleAdminForm(RuleForm):
    class Meta(RuleForm.Meta):
        fields = ("channel", *RuleForm.Meta.fields)

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]  # the instance now holds the form's values
        channel = self.cleaned_data.get("channel")
        if channel is not None and not self.errors:
            try:
                channels.check_rule(self.instance, channel)
            except InvalidInput as exc:
                self.add_error(exc.field if exc.field in self.fields else None, str(exc))


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    form = RuleAdminForm
    list_display = ("__str__", "channel", "kind", "threshold", "for_seconds", "enabled")
    list_filter = ("kind", "enabled")

    def save_model(self, request: HttpRequest, obj: AlertRule, form: Any, change: bool) -> None:
        adopt(obj, form.save())  # RuleForm.save: channels.save_rule

    def delete_model(self, request: HttpRequest, obj: AlertRule) -> None:
        channels.remove_rule(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AlertRule]) -> None:
        for rule in queryset:
            channels.remove_rule(rule)


class ReadOnly(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Alert)
class AlertAdmin(ReadOnly):
    list_display = ("summary", "kind", "state", "channel", "opened_at", "resolved_at")
    list_filter = ("state", "kind")
    search_fields = ("summary", "subject", "todo_id", "queue")


@admin.register(AlertDelivery)
class AlertDeliveryAdmin(ReadOnly):
    list_display = ("message_id", "message", "channel", "state", "tries", "status_code", "error")
    list_filter = ("state", "message")
