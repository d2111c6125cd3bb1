"""Run the maintenance job now: proposals from effectiveness, and automatic de-escalation."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Open maintenance proposals (review queue) for every owner's engrams, or one owner's "
        "with --owner, and print them. The daily periodic job runs the same service."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--owner", help="only this owner (username)")

    def handle(self, *args: Any, **options: Any) -> None:
        from memory.services import maintenance

        users = get_user_model().objects.filter(engram__isnull=False).distinct()
        if options.get("owner"):
            users = get_user_model().objects.filter(username=options["owner"])
            if not users.exists():
                raise CommandError(f"--owner: no user named {options['owner']!r}")
        total = 0
        for owner in users.order_by("username"):
            items = maintenance.maintain(owner=owner)
            total += len(items)
            for item in items:
                payload = item.payload
                engram_id = item.engram.engram_id if item.engram else "-"
                fields = payload.get("fields") or {}
                shown = "; ".join(f"{k} = {v!r}" for k, v in fields.items()) or "-"
                self.stdout.write(
                    f"{owner.get_username()}  {engram_id}  {payload.get('change')}  "
                    f"({payload.get('evidence', {}).get('quadrant')}, "
                    f"{payload.get('producer')})  {shown}"
                )
        noun = "proposal" if total == 1 else "proposals"
        self.stdout.write(
            self.style.SUCCESS(f"{total} new maintenance {noun}; decide them in the review queue.")
        )
