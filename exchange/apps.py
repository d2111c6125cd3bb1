from __future__ import annotations

from django.apps import AppConfig


class ExchangeConfig(AppConfig):
    name = "exchange"
    verbose_name = "Learning exchange"
    default_auto_field = "django.db.models.BigAutoField"
