from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from engramsite.api import api
from memory.views import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("api/", api.urls),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("exchange/", include("exchange.urls", namespace="exchange")),
    path("patterns/", include("patterns.urls", namespace="patterns")),
    path("dialectic/", include("dialectic.urls", namespace="dialectic")),
    path("", include("memory.urls")),
]
