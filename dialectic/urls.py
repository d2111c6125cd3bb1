from __future__ import annotations

from django.urls import path

from dialectic import views

app_name = "dialectic"

urlpatterns = [
    path("", views.index, name="index"),
    path("theses/<int:pk>/", views.thesis_detail, name="thesis"),
    path("artifacts/<int:pk>/", views.artifact_detail, name="artifact"),
    path("artifacts/<int:pk>/retire/", views.artifact_retire_view, name="artifact_retire"),
]
