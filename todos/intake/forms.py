"""Forms shared by the admin and the Board."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from switchboard.models import Endpoint
from switchboard.scope import routable_from
from todos import limits
from todos.intake import routing, sources
from todos.intake.deliveries import NotJson, parse_body
from todos.models import Rule, Source


class MatchField(forms.CharField):
    """The match as JSON text; cleaned to the decoded value (the language is checked by
    ``Rule.clean``). Blank means ``{}``: match everything."""

    widget = forms.Textarea(
        attrs={
            "rows": 10,
            "spellcheck": "false",
            "class": "mono",
            "style": "font-family: monospace",
        }
    )

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return value
        return json.dumps({} if value is None else value, indent=2, ensure_ascii=False)

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value) or ""
        if not text.strip():
            return {}
        try:
            decoded = routing.loads(text)
        except routing.NotStorableJson as exc:
            raise forms.ValidationError(f"The match {exc}.") from None
        return decoded


class EndpointChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.slug} ({obj.name})"


class RuleForm(forms.ModelForm):
    """A rule's fields, for the Board's rule pages and the admin's (its own page and the inline
    on its source's page). Saving goes through ``todos.intake.sources``: ``create_rule`` for a new
    rule, ``update_rule`` for an edit, so both screens store the same rule for the same input.

    ``source`` (the Board) limits the endpoints offered to the live ones it may route to; the admin
    offers every endpoint and ``Rule.clean`` refuses a foreign or revoked one.
    """

    append = False  # set by clean_position: a new rule without a position goes last

    match = MatchField(
        required=False,
        help_text='All conditions must hold; {} matches everything. E.g. {"headers": '
        '{"X-GitHub-Event": "check_run"}, "payload": {"check_run.conclusion": '
        '{"in": ["failure", "timed_out"]}}}',
    )
    position = forms.IntegerField(
        required=False,
        min_value=-1_000_000,
        max_value=1_000_000,
        help_text="Rules are tried in ascending position; empty puts a new rule last.",
    )

    # The numbers' bounds are the rule's own (``Rule.clean_fields``), said once and the same
    # here, in the admin and by ``create_rule``: no bound or decimal places on the form's field
    # to say them a second way ("Ensure that there are no more than 6 decimal places.").
    priority = forms.IntegerField(
        required=False,
        help_text=f"Higher is claimed first ({limits.PRIORITY_MIN} to {limits.PRIORITY_MAX});"
        " empty is 0.",
    )
    max_cost_usd = forms.CharField(
        required=False,
        label="Max cost usd",
        help_text="Each todo's cost cap in USD: past it, its holder is stopped (budget_exceeded)"
        " and it is dead-lettered; $0 allows no priced call; empty: the queue's default, if any.",
    )

    class Meta:
        model = Rule
        fields = (
            "name",
            "endpoint",
            "queue",
            "match",
            "title_template",
            "work_order_template",
            "max_attempts",
            "position",
            "enabled",
            # Time on the todos it creates (sources.RULE_TIME_FIELDS), counted from arrival.
            *sources.RULE_TIME_FIELDS,
        )
        field_classes = {"endpoint": EndpointChoiceField}
        widgets = {
            "name": forms.TextInput(),
            "queue": forms.TextInput(),
            "title_template": forms.TextInput(),
            "work_order_template": forms.Textarea(attrs={"rows": 5}),
            "dedupe_key_path": forms.TextInput(),
        }
        help_texts = {
            "endpoint": "Its agents receive the todos.",
            "title_template": "{{ dotted.path }} is replaced by that payload field, e.g. "
            "Fix {{ check_run.name }} on {{ repository.full_name }}.",
            "work_order_template": "The instructions the agent reads; placeholders as above.",
            "max_attempts": "How many claims the todo gets before it is dead-lettered (1 to 1000).",
            "delay_seconds": "Not claimable until this many seconds after the delivery arrives.",
            "start_within_seconds": "Dead-lettered if still unclaimed this many seconds after"
            " arrival.",
            "finish_within_seconds": "Dead-lettered if unfinished this many seconds after arrival;"
            " no lease runs past it.",
            "run_timeout_seconds": "One attempt's limit in seconds (at least 10); empty: the"
            " queue's default, if any.",
            "dedupe_key_path": "A dotted payload path, e.g. check_run.html_url: a second delivery"
            " with the same value while the first todo is unfinished creates nothing new.",
        }

    def __init__(self, *args: Any, source: Source | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        endpoint = self.fields.get("endpoint")
        if source is not None and isinstance(endpoint, forms.ModelChoiceField):
            # Only the live endpoints the source may route to (its owner's, and its owner's
            # teams'; a team's source: the team's): a foreign or revoked id is "not one of the
            # choices" here, and Rule.clean refuses it again if it ever got this far.
            endpoint.queryset = Endpoint.objects.filter(
                routable_from(source), revoked_at__isnull=True
            )
            endpoint.empty_label = "Choose an endpoint"  # an edit whose endpoint died selects none
            endpoint.help_text = (
                "Its agents receive the todos; only your live endpoints are offered."
            )
        if self.instance.pk is None:
            self.initial["position"] = None  # empty: after the last rule
        dedupe = self.fields.get("dedupe_key_path")
        if isinstance(dedupe, forms.CharField):
            dedupe.empty_value = None  # empty: no dedupe key (not a path "" to check)

    def clean_max_cost_usd(self) -> str | None:
        text: str = self.cleaned_data["max_cost_usd"]
        return text or None  # read, and refused in the rule's words, by Rule.clean_fields

    def clean_priority(self) -> int:
        priority: int | None = self.cleaned_data["priority"]
        return 0 if priority is None else priority

    def clean_position(self) -> int:
        position: int | None = self.cleaned_data["position"]
        # Empty: an edit keeps its place; a new rule is appended by create_rule (``append``).
        self.append = position is None and self.instance.pk is None
        return self.instance.position if position is None else position

    def save(self, commit: bool = True) -> Rule:
        """Store the rule through ``todos.intake.sources``; raise ``ValidationError`` as it does.

        ``commit=False`` (the admin's first step) returns the unsaved instance, as Django's does.
        """
        if not commit:
            return super().save(commit=False)
        if self.errors:
            raise ValueError("the rule was not stored: the form does not validate")
        rule = self.instance
        if rule.pk is not None:
            return sources.update_rule(rule)
        return sources.create_rule(
            rule.source,
            rule.endpoint,
            queue=rule.queue,
            match=rule.match,
            name=rule.name,
            title_template=rule.title_template,
            work_order_template=rule.work_order_template,
            max_attempts=rule.max_attempts,
            position=None if self.append else rule.position,
            enabled=rule.enabled,
            **{name: getattr(rule, name) for name in sources.RULE_TIME_FIELDS},
        )


class RuleTestForm(forms.Form):
    """A delivery to try against a source's rules: headers as ``Name: value`` lines, JSON."""

    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 5, "style": "font-family: monospace"}),
        help_text="One header per line, e.g. X-GitHub-Event: check_run. "
        "Secret headers are dropped, as intake drops them.",
    )
    payload = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 14, "style": "font-family: monospace"}),
        help_text="The JSON body of the delivery.",
    )

    def clean_headers(self) -> list[tuple[str, str]]:
        return parse_header_lines(self.cleaned_data["headers"])

    def clean_payload(self) -> Any:
        try:
            return parse_body(self.cleaned_data["payload"].encode(), "application/json")
        except NotJson as exc:
            raise forms.ValidationError(exc.message) from None


def parse_header_lines(text: str) -> list[tuple[str, str]]:
    """``Name: value`` lines as pairs; raise ``ValidationError`` naming the first bad line."""
    pairs: list[tuple[str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip():
            raise forms.ValidationError(f"Line {number} is not “Name: value”.")
        pairs.append((name.strip(), value.strip()))
    return pairs
