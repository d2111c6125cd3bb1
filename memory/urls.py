from __future__ import annotations

from django.urls import path

from memory import views

app_name = "memory"

urlpatterns = [
    path("", views.home, name="home"),
    path("history/", views.event_list, name="events"),
    path("engrams/", views.engram_list, name="engram_list"),
    path("engrams/<str:engram_id>/", views.engram_detail, name="engram_detail"),
    path("engrams/<str:engram_id>/edit/", views.engram_edit, name="engram_edit"),
    path("engrams/<str:engram_id>/<slug:action>/", views.engram_action, name="engram_action"),
    path("review/", views.review_queue, name="review"),
    path("review/all/", views.review_all, name="review_all"),
    path("review/<int:pk>/decide/", views.review_decide, name="review_decide"),
    path("review/archived/", views.review_archived, name="review_archived"),
    path("review/<int:pk>/restore/", views.review_restore, name="review_restore"),
    path("effectiveness/", views.effectiveness, name="effectiveness"),
    path("sessions/", views.session_list, name="sessions"),
    path("sessions/<int:pk>/", views.session_detail, name="session_detail"),
    path("episodes/", views.episode_list, name="episodes"),
    path("settings/", views.settings_view, name="settings"),
    path("settings/learning/", views.learning_settings, name="learning_settings"),
    path("learning/<str:engram_id>/undo/", views.lesson_undo, name="lesson_undo"),
    path("tokens/", views.token_list, name="tokens"),
    path("tokens/new/", views.token_create, name="token_create"),
    path("tokens/<int:pk>/revoke/", views.token_revoke, name="token_revoke"),
]
