"""Export a signed engram-exchange/1 packet of eligible abstracts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from exchange.services.outgoing import packet_export, packet_yaml
from memory.errors import DomainError
from memory.management.owner import resolve_owner


class Command(BaseCommand):
    help = "Sign a packet of the owner's eligible abstracts (ABS-, public/template, active)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "ids", nargs="*", help="Abstract ids to export (default: every eligible one)."
        )
        parser.add_argument("--out", type=Path, help="File to write (default: stdout).")
        parser.add_argument("--user", help="Owner username (default: the first superuser).")
        parser.add_argument(
            "--yaml",
            action="store_true",
            help="Print a YAML view for reading instead; it is not a packet peers import.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options.get("user"))
        try:
            result = packet_export(
                owner=owner, ids=options["ids"] or None, record=not options["yaml"]
            )
        except DomainError as exc:
            raise CommandError(str(exc)) from None
        data = packet_yaml(result.packet).encode("utf-8") if options["yaml"] else result.raw
        out: Path | None = options.get("out")
        if out is None:
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            return
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        count = len(result.packet["abstracts"])  # type: ignore[arg-type]
        self.stderr.write(f"Wrote {result.packet_id} ({count} abstracts) to {out}")
