from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from switchboard import board, views
from todos import sources_views, webhooks
from todos import views as todo_views

urlpatterns = [
    # The Board (operators' web UI).
    path("", todo_views.todo_list, name="todo_list"),
    path("todos/<str:todo_id>", todo_views.todo_detail, name="todo_detail"),
    path("todos/<str:todo_id>/<str:action>", todo_views.todo_action, name="todo_action"),
    path("activity/", views.activity, name="activity"),
    path("endpoints/", board.endpoint_list, name="endpoint_list"),
    path("endpoints/new", board.endpoint_new, name="endpoint_new"),
    path("endpoints/<slug:slug>", board.endpoint_detail, name="endpoint_detail"),
    path("endpoints/<slug:slug>/keys", board.endpoint_mint_key, name="endpoint_mint_key"),
    path(
        "endpoints/<slug:slug>/keys/<int:key_id>/revoke",
        board.endpoint_revoke_key,
        name="endpoint_revoke_key",
    ),
    path("endpoints/<slug:slug>/revoke", board.endpoint_revoke, name="endpoint_revoke"),
    path("sources/", sources_views.source_list, name="sources"),
    path("sources/new", sources_views.source_new, name="source_new"),
    path("sources/<slug:slug>", sources_views.source_detail, name="source_detail"),
    path("sources/<slug:slug>/rotate", sources_views.source_rotate, name="source_rotate"),
    path("sources/<slug:slug>/verify", sources_views.source_verify, name="source_verify"),
    path("sources/<slug:slug>/test", sources_views.source_test, name="source_test"),
    path(
        "sources/<slug:slug>/events/<int:event_id>",
        sources_views.source_event,
        name="source_event",
    ),
    path("sources/<slug:slug>/rules/new", sources_views.rule_new, name="rule_new"),
    path("sources/<slug:slug>/rules/<int:rule_id>/edit", sources_views.rule_edit, name="rule_edit"),
    path(
        "sources/<slug:slug>/rules/<int:rule_id>/delete",
        sources_views.rule_delete,
        name="rule_delete",
    ),
    path(
        "sources/<slug:slug>/rules/<int:rule_id>/enable",
        sources_views.rule_set_enabled,
        {"enabled": True},
        name="rule_enable",
    ),
    path(
        "sources/<slug:slug>/rules/<int:rule_id>/disable",
        sources_views.rule_set_enabled,
        {"enabled": False},
        name="rule_disable",
    ),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    # Machines and staff.
    re_path(r"^hooks(?:/(?P<source_slug>.*))?\Z", webhooks.hook, name="hook"),
    path("healthz", views.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("", include("django_prometheus.urls")),
]
