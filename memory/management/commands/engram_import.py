"""Import engrams from PLUR/Datacore YAML, toejough TOML or a Mem0 JSON export."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory import interop
from memory.errors import DomainError
from memory.management.owner import resolve_owner
from memory.management.progress import progress_bar
from memory.services.interop import engrams_import


class Command(BaseCommand):
    help = "Import an engram file; a malformed file is rejected whole and nothing is written."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--format", choices=sorted(interop.FORMATS), help="Default: detected from the file."
        )
        parser.add_argument("--user", help="Owner username (default: the first superuser).")
        parser.add_argument("--dry-run", action="store_true", help="Check and count only.")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from None
        fmt = options["format"] or interop.detect_format(path.name, text)
        if fmt is None:
            raise CommandError(
                f"Cannot tell the format of {path.name}; pass --format "
                f"({', '.join(sorted(interop.FORMATS))})."
            )
        owner = resolve_owner(options.get("user"))
        try:
            with progress_bar("Embedding") as bar:
                report = engrams_import(
                    owner=owner, text=text, fmt=fmt, dry_run=options["dry_run"], progress=bar
                )
        except DomainError as exc:
            raise CommandError(f"{path}: {exc}") from None
        verb = "Would import" if report.dry_run else "Imported"
        self.stdout.write(
            f"{verb} {report.created} of {report.total} engrams from {path.name} ({fmt}); "
            f"{report.skipped_existing} already present by id, {report.duplicates} duplicates."
        )
