from __future__ import annotations

from django.urls import path

from exchange import views

app_name = "exchange"

urlpatterns = [
    path("", views.index, name="index"),
    path("identity/", views.identity_update, name="identity_update"),
    path("peers/add/", views.peer_add, name="peer_add"),
    path("peers/<int:pk>/<slug:decision>/", views.peer_decide, name="peer_decide"),
    path("outgoing/", views.outgoing_page, name="outgoing"),
    path("outgoing/preview/", views.outgoing_preview, name="outgoing_preview"),
    path("outgoing/download/", views.outgoing_download, name="outgoing_download"),
    path("abstracts/new/", views.abstract_new, name="abstract_new"),
    path("abstracts/", views.abstract_create_view, name="abstract_create"),
    path("incoming/", views.incoming_page, name="incoming"),
    path("incoming/upload/", views.incoming_upload, name="incoming_upload"),
    path("packets/<int:pk>/", views.packet_detail, name="packet_detail"),
    path("items/<int:pk>/<slug:decision>/", views.item_decide, name="item_decide"),
]
