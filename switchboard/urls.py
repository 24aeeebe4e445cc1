from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from switchboard import views

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", views.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("", include("django_prometheus.urls")),
]
