"""Purge retired engrams older than the retention (events keep their ids)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from memory.management.owner import resolve_owner
from memory.services.lifecycle import engrams_compact


class Command(BaseCommand):
    help = "Delete engrams retired more than --days ago (default ENGRAM_RETENTION_DAYS)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, default=settings.ENGRAM_RETENTION_DAYS)
        parser.add_argument("--user", help="Owner username (default: the first superuser).")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options.get("user"))
        purged = engrams_compact(owner=owner, retention_days=options["days"])
        self.stdout.write(f"Purged {purged} retired engrams older than {options['days']} days.")
