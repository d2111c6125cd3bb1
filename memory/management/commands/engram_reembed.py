"""Re-embed engrams whose vectors came from another model (or every engram with --all)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.management.progress import progress_bar
from memory.models import Engram
from memory.services.embeddings import DEFAULT_BATCH


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
        seen = 0
        with progress_bar("Re-embedding", enabled=not quiet) as bar:

            def advance(count: int) -> None:
                nonlocal seen
                seen += count
                bar(seen, total)

            bar(0, total)
            done = embeddings.reembed(qs, batch=batch, progress=advance)
        skipped = f" ({seen - done} edited meanwhile, left for the next run)" if seen > done else ""
        self.stdout.write(f"Re-embedded {done} engram(s) with {MODEL_ID}{skipped}.")
