"""Read-only admin list of ``todo_spans``, across todos.

Like the attempts and activity lists (``attempts/admin.py``, ``activity/admin.py``), and for the
same reason: Django 6 refuses to register a model whose primary key is composite, and
``(todo_id, trace_id, span_id)`` is. So the changelist is served through the Todo admin's URLs
(``todos.admin.TodoAdmin.get_urls``, through ``switchboard.lib.admin.serve_under_todo``) by an
unregistered ``TodoSpanAdmin``, and its rows link to their todo. Nothing here writes: spans are
written only by ``otlp.store``.

The price table (``Price``) is registered and editable: its form holds a row to the rules a
price file's rows meet (``otlp.prices``), the model's constraints refuse a second row of one
model and provider from the same date; a save makes this process's price book re-read the
table (others within ``otlp.prices.BOOK_TTL``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin import AdminSite
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern

from otlp import prices
from otlp.models import PRICE_FIELDS, Price, TodoSpan
from switchboard.lib.admin import TodoRowsAdmin, changelist_urls, serve_under_todo


class TodoSpanAdmin(TodoRowsAdmin):
    """The span list. Not registered (see the module docstring); mounted by ``urls()``."""

    list_display = (
        "todo_link",
        "attempt_seq",
        "name",
        "category",
        "tool",
        "status_code",
        "service_name",
        "start_at",
        "end_at",
        "truncated",
    )
    list_filter = ("category", "status_code", "truncated")
    search_fields = ("=todo__id",)
    ordering = ("-received_at",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[TodoSpan]:
        # The list names the todo by id (the row's own column) and never reads attributes.
        return super().get_queryset(request).defer("attributes")


@serve_under_todo
def urls(admin_site: AdminSite) -> list[URLPattern]:
    """The span changelist, for a registered ModelAdmin's ``get_urls`` to include."""
    return changelist_urls(TodoSpanAdmin(TodoSpan, admin_site), "spans/")


class PriceForm(forms.ModelForm):
    """A row held to the rules ``manage.py prices load`` holds a file's rows to
    (``otlp.prices``): the model's length and characters, each price's ceiling, the provider in
    lowercase as the price book looks it up; a refusal on its field."""

    class Meta:
        model = Price
        fields = ("model", "provider", "effective_from", *PRICE_FIELDS, "source")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        checks: list[tuple[str, Callable[[Any], Any]]] = [
            ("model", prices.check_model),
            ("provider", lambda text: text.strip().lower()),
            *((f, lambda value, f=f: prices.check_price(value, f)) for f in PRICE_FIELDS),
        ]
        for field, check in checks:
            if data.get(field) is None:
                continue
            try:
                data[field] = check(data[field])
            except prices.PriceError as exc:
                self.add_error(field, str(exc).split(": ", 1)[-1])
        return data


@admin.register(Price)
class PriceAdmin(admin.ModelAdmin):
    """USD per million tokens, per model (or ``*`` pattern) and provider, from a date on."""

    form = PriceForm

    list_display = (
        "model",
        "provider",
        "effective_from",
        "input",
        "output",
        "cache_read",
        "cache_write",
        "reasoning",
        "source",
    )
    list_filter = ("provider",)
    search_fields = ("model",)
    ordering = ("model", "provider", "-effective_from")
    readonly_fields = ("updated_at",)

    def save_model(self, request: HttpRequest, obj: Price, form: Any, change: bool) -> None:
        obj.source = obj.source or f"admin:{request.user.get_username()}"
        super().save_model(request, obj, form, change)
        prices.invalidate()

    def delete_model(self, request: HttpRequest, obj: Price) -> None:
        super().delete_model(request, obj)
        prices.invalidate()
