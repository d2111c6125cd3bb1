"""Re-embed engrams whose vectors came from another model (or every engram with --all)."""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.models import Engram
from memory.services.embeddings import DEFAULT_BATCH

BAR_WIDTH = 30


def progress_line(done: int, total: int, started: float) -> str:
    """A one-line text progress bar with count, percentage and rate (engrams per second)."""
    fraction = done / total if total else 1.0
    filled = int(BAR_WIDTH * fraction)
    elapsed = max(time.monotonic() - started, 1e-9)
    bar = "#" * filled + "-" * (BAR_WIDTH - filled)
    return f"\r[{bar}] {done}/{total} {fraction:6.1%} {done / elapsed:7.1f}/s"


class Command(BaseCommand):
    help = "Re-embed engrams stored with another embedding model (or all with --all)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--all", action="store_true", help="re-embed every engram")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH)
        parser.add_argument("--owner", help="only this owner's engrams (username)")
        parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def handle(self, *args: Any, **options: Any) -> None:
        from lib.embedder import MODEL_ID
        from memory.services import embeddings

        batch = max(1, int(options["batch_size"]))
        qs = Engram.objects.all() if options["all"] else embeddings.stale()
        if options["owner"]:
            qs = qs.filter(owner__username=options["owner"])
        total = qs.count()
        quiet = bool(options["quiet"])

        if total == 0:
            self.stdout.write(f"Nothing to re-embed: every engram uses {MODEL_ID}.")
            return
        started = time.monotonic()
        seen = 0

        def show(text: str) -> None:
            if not quiet:
                sys.stderr.write(text)
                sys.stderr.flush()

        def advance(count: int) -> None:
            nonlocal seen
            seen += count
            show(progress_line(seen, total, started))

        show(progress_line(0, total, started))
        done = embeddings.reembed(qs, batch=batch, progress=advance)
        show("\n")
        skipped = f" ({seen - done} edited meanwhile, left for the next run)" if seen > done else ""
        self.stdout.write(f"Re-embedded {done} engram(s) with {MODEL_ID}{skipped}.")
