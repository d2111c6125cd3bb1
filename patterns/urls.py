from __future__ import annotations

from django.urls import path

from patterns import views

app_name = "patterns"

urlpatterns = [
    path("", views.index, name="index"),
    path("learn/", views.learn, name="learn"),
    path("compose/", views.compose, name="compose"),
    path("settings/", views.settings_update, name="settings"),
    path("propose/", views.propose, name="propose"),
    path("<slug:key>/<slug:action>/", views.act, name="act"),
]
