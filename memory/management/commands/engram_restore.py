"""Restore a backup made by engram_backup: all or nothing, never over an owner's data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.errors import DomainError
from memory.management.progress import progress_bar
from memory.services.backup import backup_restore


class Command(BaseCommand):
    help = (
        "Restore owners from an engram_backup file in one transaction. An owner that already "
        "has data here is refused (nothing is written); --as restores a one-owner backup under "
        "another username (its API tokens are not carried over)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument("--as", dest="as_owner", help="Restore the one owner under this name.")
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        if not path.is_file():
            raise CommandError(f"No backup file at {path}.")
        try:
            with progress_bar("Restoring", enabled=not options["no_progress"]) as progress:
                summary = backup_restore(
                    path=path, as_owner=options.get("as_owner"), progress=progress
                )
        except DomainError as exc:
            raise CommandError(f"{exc} Nothing was restored.") from None
        owners = ", ".join(
            old if old == new else f"{old} as {new}" for old, new in summary.owners.items()
        )
        rows = sum(summary.counts.values())
        self.stdout.write(f"Restored {owners or 'no owner'}: {rows} rows.")
        for label, n in summary.counts.items():
            self.stdout.write(f"  {label}: {n}")
        for label, n in summary.skipped.items():
            self.stdout.write(f"  {label}: {n} not restored")
        for note in summary.notes:
            self.stdout.write(f"Note: {note}")
