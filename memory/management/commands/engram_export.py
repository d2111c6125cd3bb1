"""Export engrams as PLUR engrams.yaml."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.management.owner import resolve_owner
from memory.management.progress import progress_bar
from memory.services.interop import EXPORT_FORMATS, engrams_export


class Command(BaseCommand):
    help = "Export the owner's engrams (PLUR engrams.yaml) to a file or stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=EXPORT_FORMATS, default="plur-yaml")
        parser.add_argument("--out", type=Path, help="File to write (default: stdout).")
        parser.add_argument("--user", help="Owner username (default: the first superuser).")
        parser.add_argument("--include-retired", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options.get("user"))
        with progress_bar("Exporting") as bar:
            text = engrams_export(
                owner=owner,
                fmt=options["format"],
                include_retired=options["include_retired"],
                progress=bar,
            )
        out: Path | None = options.get("out")
        if out is None:
            sys.stdout.write(text)
            return
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        self.stderr.write(f"Wrote {out}")
