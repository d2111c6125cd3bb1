"""Resolve the owner a management command acts for."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError


def resolve_owner(username: str | None) -> Any:
    User = get_user_model()
    if username:
        try:
            return User.objects.get(username=username)
        except User.DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
    owner = User.objects.filter(is_superuser=True).order_by("pk").first()
    if owner is None:
        owner = User.objects.order_by("pk").first()
    if owner is None:
        raise CommandError("No owner account yet: run `manage.py engram_bootstrap` first.")
    return owner
