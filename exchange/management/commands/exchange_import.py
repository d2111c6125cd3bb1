"""Import an engram-exchange/1 packet through every gate."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from exchange.packet import MAX_PACKET_BYTES
from exchange.services.incoming import packet_import
from memory.management.owner import resolve_owner


class Command(BaseCommand):
    help = "Import a packet (FILE, or - for stdin); prints the result as JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="Packet file, or - to read stdin.")
        parser.add_argument("--user", help="Owner username (default: the first superuser).")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options.get("user"))
        name: str = options["file"]
        # One byte past the limit is enough for the size gate to refuse it.
        try:
            if name == "-":
                raw = sys.stdin.buffer.read(MAX_PACKET_BYTES + 1)
            else:
                with Path(name).open("rb") as handle:
                    raw = handle.read(MAX_PACKET_BYTES + 1)
        except OSError as exc:
            raise CommandError(f"Cannot read {name}: {exc.strerror}") from None
        result = packet_import(owner=owner, raw=raw, actor="command")
        self.stdout.write(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
        if result.status == "rejected":
            raise CommandError(f"Packet rejected at {result.gate}.")
