"""First run: create the owner account and an API token, and print them once."""

from __future__ import annotations

import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from memory.models import ApiToken


class Command(BaseCommand):
    help = "Create the owner account and a first API token if no user exists yet."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default=settings.ENGRAM_OWNER_USERNAME)

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        if User.objects.exists():
            self.stdout.write(
                "Engram is set up. Log in with your owner account; create tokens on the Tokens "
                "page or with `manage.py engram_token create`."
            )
            return
        password = secrets.token_urlsafe(12)
        with transaction.atomic():
            owner = User.objects.create_superuser(
                username=options["username"], email="", password=password
            )
            _, raw = ApiToken.issue(owner=owner, name="first-run", scopes=["*"])
        bar = "=" * 72
        self.stdout.write(
            f"\n{bar}\n Engram first run — this is shown once, keep it somewhere safe.\n"
            f"\n Dashboard: {settings.SITE_URL}/\n Username:  {owner.get_username()}\n"
            f" Password:  {password}\n API token: {raw}\n"
            f"\n Change the password with `engram manage changepassword "
            f"{owner.get_username()}`.\n For `engram doctor`, `engram status` and the Claude "
            f"Code hooks, put this in your shell profile:\n"
            f"   export ENGRAM_URL={settings.SITE_URL} ENGRAM_TOKEN={raw}\n"
            f"{bar}\n"
        )
