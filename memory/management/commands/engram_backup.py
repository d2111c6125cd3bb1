"""Back up one owner, several, or every owner into one file (a consistent snapshot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from memory.errors import DomainError
from memory.management.progress import progress_bar
from memory.services.backup import backup_write


class Command(BaseCommand):
    help = (
        "Write every row the named owners own (engrams, history, sessions, outcomes, review, "
        "exchange keys and peers, tokens: every model with an owner) to one JSON-lines file; "
        "gzip when the name ends in .gz. Without --user: every owner."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--out",
            type=Path,
            help="File to write (default: engram-backup-<UTC time>.jsonl.gz here).",
        )
        parser.add_argument(
            "--user", action="append", help="Owner username; repeat for several (default: all)."
        )
        parser.add_argument("--no-progress", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        out: Path = options.get("out") or Path(
            f"engram-backup-{timezone.now().strftime('%Y%m%dT%H%M%SZ')}.jsonl.gz"
        )
        if out.exists():
            raise CommandError(f"{out} exists; choose another --out (a backup never overwrites).")
        out.parent.mkdir(parents=True, exist_ok=True)
        try:
            with progress_bar("Backing up", enabled=not options["no_progress"]) as progress:
                summary = backup_write(path=out, usernames=options.get("user"), progress=progress)
        except DomainError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"Could not write {out}: {exc}") from None
        rows = sum(summary.counts.values())
        self.stdout.write(
            f"Wrote {out}: {len(summary.owners)} owner(s) "
            f"({', '.join(summary.owners) or 'none'}), {rows} rows."
        )
        for label, n in summary.counts.items():
            if n:
                self.stdout.write(f"  {label}: {n}")
