from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.generic import RedirectView

from activity import views as activity_views
from alerts import views as alert_views
from switchboard import endpoint_views, oauth_views, team_views, views
from switchboard.models import SLUG_PATTERN
from todos import overview_views, schedule_views
from todos import views as todo_views
from todos.intake import source_views
from todos.intake import views as hooks

# The authorization server (switchboard/oauth_views.py), in django-oauth-toolkit's namespace: its
# views and metadata reverse these names. Issuer: this origin; its metadata at the root.
_SLUG = rf"(?P<slug>{SLUG_PATTERN})"  # the models' rule
oauth_patterns = (
    [
        path(
            ".well-known/oauth-authorization-server",
            oauth_views.server_metadata,
            name="oauth-server-metadata",
        ),
        path("oauth/authorize/", oauth_views.authorize, name="authorize"),
        path("oauth/token/", oauth_views.token, name="token"),
        path("oauth/revoke/", oauth_views.revoke_token, name="revoke-token"),
        path("oauth/register/", oauth_views.register, name="dcr-register"),
        # RFC 7592: every registration answer names this URL (registration_client_uri).
        path(
            "oauth/register/<str:client_id>/",
            oauth_views.register_management,
            name="dcr-register-management",
        ),
    ],
    "oauth2_provider",
)

# A page whose database connection failed answers 503, not 500 (switchboard/views.py).
handler500 = "switchboard.views.server_error"
# A bad request (a Host not in ALLOWED_HOSTS above all) on an OAuth path is RFC 6749 JSON.
handler400 = "switchboard.views.bad_request"
# Every 404, an unknown thing's or an unknown address's, is the Board's page with the rail.
handler404 = "switchboard.views.page_not_found"

urlpatterns = [
    path("", include(oauth_patterns)),
    re_path(
        rf"^\.well-known/oauth-protected-resource/(?P<kind>mcp)/{_SLUG}/oauth\Z",
        oauth_views.protected_resource,
        name="oauth_resource_mcp",
    ),
    re_path(
        rf"^\.well-known/oauth-protected-resource/(?P<kind>a2a)/{_SLUG}\Z",
        oauth_views.protected_resource,
        name="oauth_resource_a2a",
    ),
    # Any other OAuth document (the key URL's included: it advertises no OAuth) is a JSON 404.
    re_path(
        r"^(?:\.well-known/(?:oauth-[a-z-]+|openid-configuration)|oauth)(?P<rest>/[\s\S]*)?\Z",
        oauth_views.not_found,
    ),
    # Browsers ask for /favicon.ico whatever the page links; the Board links the SVG.
    path("favicon.ico", RedirectView.as_view(url=static("favicon.svg"), permanent=True)),
    # The Board (operators' web UI).
    path("", todo_views.todo_list, name="todo_list"),
    # Forget erases spans too: the trail app's (activity/forget.py); the rest are the list's.
    path("bulk/forget", activity_views.bulk_forget, name="bulk_forget"),
    path("bulk/<str:action>", todo_views.bulk_action, name="bulk_action"),
    path("queues/<str:action>", todo_views.queue_action, name="queue_action"),
    # Before the todo's own page: "new" is no todo id (td_…).
    path("todos/new", todo_views.todo_new, name="todo_new"),
    path("todos/<str:todo_id>", activity_views.todo_detail, name="todo_detail"),
    path("todos/<str:todo_id>/<str:action>", activity_views.todo_action, name="todo_action"),
    path("overview/", overview_views.overview_page, name="overview"),
    path("activity/", activity_views.activity_feed, name="activity"),
    path("alerts/", alert_views.alerts_page, name="alerts"),
    path("alerts/bell", alert_views.bell, name="alerts_bell"),
    path("alerts/channels/new", alert_views.channel_add, name="alert_channel_add"),
    path(
        "alerts/channels/<str:channel_id>/secret",
        alert_views.channel_secret,
        name="alert_channel_secret",
    ),
    path(
        "alerts/channels/<str:channel_id>/rotate",
        alert_views.channel_rotate,
        name="alert_channel_rotate",
    ),
    path(
        "alerts/channels/<str:channel_id>/test",
        alert_views.channel_test,
        name="alert_channel_test",
    ),
    path(
        "alerts/channels/<str:channel_id>/enabled",
        alert_views.channel_enabled,
        name="alert_channel_enabled",
    ),
    path(
        "alerts/channels/<str:channel_id>/move",
        alert_views.channel_move,
        name="alert_channel_move",
    ),
    path(
        "alerts/channels/<str:channel_id>/delete",
        alert_views.channel_delete,
        name="alert_channel_delete",
    ),
    path("endpoints/", endpoint_views.endpoint_list, name="endpoint_list"),
    path("endpoints/new", endpoint_views.endpoint_new, name="endpoint_new"),
    path("endpoints/<slug:slug>", endpoint_views.endpoint_detail, name="endpoint_detail"),
    path("endpoints/<slug:slug>/keys", endpoint_views.endpoint_mint_key, name="endpoint_mint_key"),
    path("endpoints/<slug:slug>/key", endpoint_views.endpoint_key_shown, name="endpoint_key_shown"),
    path(
        "endpoints/<slug:slug>/keys/<int:key_id>/revoke",
        endpoint_views.endpoint_revoke_key,
        name="endpoint_revoke_key",
    ),
    path("endpoints/<slug:slug>/revoke", endpoint_views.endpoint_revoke, name="endpoint_revoke"),
    path(
        "endpoints/<slug:slug>/push-url",
        endpoint_views.endpoint_push_url,
        name="endpoint_push_url",
    ),
    path(
        "endpoints/<slug:slug>/connections/<int:application_id>/<int:user_id>/revoke",
        endpoint_views.endpoint_revoke_connection,
        name="endpoint_revoke_connection",
    ),
    path(
        "endpoints/<slug:slug>/push-test",
        endpoint_views.endpoint_push_test,
        name="endpoint_push_test",
    ),
    path(
        "endpoints/<slug:slug>/push-secret",
        endpoint_views.endpoint_rotate_push_secret,
        name="endpoint_rotate_push_secret",
    ),
    path("endpoints/<slug:slug>/move", endpoint_views.endpoint_move, name="endpoint_move"),
    path("teams/", team_views.team_list, name="teams"),
    path("teams/<slug:name>", team_views.team_detail, name="team_detail"),
    path("teams/<slug:name>/add", team_views.team_add, name="team_add"),
    path("teams/<slug:name>/remove", team_views.team_remove, name="team_remove"),
    path("teams/<slug:name>/role", team_views.team_role, name="team_role"),
    path("schedules/", schedule_views.schedule_list, name="schedules"),
    path("schedules/new", schedule_views.schedule_new, name="schedule_new"),
    path("schedules/<int:schedule_id>", schedule_views.schedule_detail, name="schedule_detail"),
    path(
        "schedules/<int:schedule_id>/remove",
        schedule_views.schedule_remove,
        name="schedule_remove",
    ),
    path(
        "schedules/<int:schedule_id>/<str:action>",
        schedule_views.schedule_action,
        name="schedule_action",
    ),
    path("sources/", source_views.source_list, name="sources"),
    path("sources/new", source_views.source_new, name="source_new"),
    path("sources/<slug:slug>", source_views.source_detail, name="source_detail"),
    path("sources/<slug:slug>/rotate", source_views.source_rotate, name="source_rotate"),
    path(
        "sources/<slug:slug>/secret", source_views.source_secret_shown, name="source_secret_shown"
    ),
    path("sources/<slug:slug>/verify", source_views.source_verify, name="source_verify"),
    path("sources/<slug:slug>/move", source_views.source_move, name="source_move"),
    path("sources/<slug:slug>/test", source_views.source_test, name="source_test"),
    path(
        "sources/<slug:slug>/events/<int:event_id>",
        source_views.source_event,
        name="source_event",
    ),
    path("sources/<slug:slug>/rules/new", source_views.rule_new, name="rule_new"),
    path("sources/<slug:slug>/rules/<int:rule_id>/edit", source_views.rule_edit, name="rule_edit"),
    path(
        "sources/<slug:slug>/rules/<int:rule_id>/delete",
        source_views.rule_delete,
        name="rule_delete",
    ),
    path(
        "sources/<slug:slug>/rules/<int:rule_id>/enable",
        source_views.rule_set_enabled,
        {"enabled": True},
        name="rule_enable",
    ),
    path(
        "sources/<slug:slug>/rules/<int:rule_id>/disable",
        source_views.rule_set_enabled,
        {"enabled": False},
        name="rule_disable",
    ),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    # Machines and staff.
    # [\s\S], not ".": a slug with a newline still reaches the view and gets a JSON answer.
    re_path(r"^hooks(?:/(?P<source_slug>[\s\S]*))?\Z", hooks.hook, name="hook"),
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("admin/", admin.site.urls),
    # django-prometheus's view, behind the bearer / address check (switchboard/views.py).
    path("metrics", views.metrics, name="prometheus-django-metrics"),
]
