"""Write one month of lifecycle events as JSONL (history/YYYY-MM.jsonl)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.management.owner import resolve_owner
from memory.models import LifecycleEvent

MONTH = re.compile(r"^(\d{4})-(\d{2})$")


class Command(BaseCommand):
    help = "Export a month of lifecycle events to history/YYYY-MM.jsonl."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--month", required=True, help="YYYY-MM")
        parser.add_argument("--user", help="Owner username (default: the first superuser).")
        parser.add_argument("--dir", type=Path, help="Output folder (default: <data dir>/history).")

    def handle(self, *args: Any, **options: Any) -> None:
        match = MONTH.match(options["month"])
        if not match or not 1 <= int(match[2]) <= 12:
            raise CommandError("--month must look like 2026-03.")
        year, month = int(match[1]), int(match[2])
        start = datetime(year, month, 1, tzinfo=UTC)
        end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
        owner = resolve_owner(options.get("user"))
        folder: Path = options.get("dir") or Path(settings.DATA_DIR) / "history"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{options['month']}.jsonl"
        events = LifecycleEvent.objects.filter(
            owner=owner, created_at__gte=start, created_at__lt=end
        ).order_by("created_at", "id")
        count = 0
        with path.open("w", encoding="utf-8") as fh:
            for event in events.iterator(chunk_size=1000):
                fh.write(
                    json.dumps(
                        {
                            "id": event.pk,
                            "event": event.event,
                            "engram": event.engram_ref or None,
                            "actor": event.actor,
                            "data": event.data,
                            "at": event.created_at.isoformat(),
                        },
                        ensure_ascii=False,
                        sort_keys=True,
                    )
                    + "\n"
                )
                count += 1
        self.stdout.write(f"Wrote {count} events to {path}")
