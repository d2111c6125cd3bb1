from __future__ import annotations

from django.urls import path

from memory import views

app_name = "memory"

urlpatterns = [
    path("", views.home, name="home"),
    path("tokens/", views.token_list, name="tokens"),
    path("tokens/new/", views.token_create, name="token_create"),
    path("tokens/<int:pk>/revoke/", views.token_revoke, name="token_revoke"),
]
