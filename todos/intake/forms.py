"""Forms shared by the admin and the Board."""

from __future__ import annotations

from typing import Any

from django import forms

from todos.intake.deliveries import NotJson, parse_body


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
