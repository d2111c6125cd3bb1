"""Re-embed engrams whose vectors came from another model (or every engram with --all)."""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction
from django.db.models import Q

from memory.models import Engram

BAR_WIDTH = 30
DEFAULT_BATCH = 64


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
        from memory.embedder import MODEL_ID, get_embedder

        batch = max(1, int(options["batch_size"]))
        qs = Engram.objects.all()
        if options["owner"]:
            qs = qs.filter(owner__username=options["owner"])
        if not options["all"]:
            qs = qs.filter(~Q(embedding_model=MODEL_ID) | Q(embedding__isnull=True))
        total = qs.count()
        quiet = bool(options["quiet"])

        def show(text: str) -> None:
            if not quiet:
                sys.stderr.write(text)
                sys.stderr.flush()

        if total == 0:
            self.stdout.write(f"Nothing to re-embed: every engram uses {MODEL_ID}.")
            return
        embedder = get_embedder()
        started = time.monotonic()
        done, last_pk = 0, 0
        show(progress_line(0, total, started))
        while True:
            # Keyset pagination: rows re-embedded drop out of the filter, so OFFSET would skip.
            rows = list(qs.filter(pk__gt=last_pk).order_by("pk").only("pk", "statement")[:batch])
            if not rows:
                break
            vectors = embedder.embed([row.statement for row in rows])
            for row, vector in zip(rows, vectors, strict=True):
                row.embedding = vector
                row.embedding_model = MODEL_ID
            with transaction.atomic():
                Engram.objects.bulk_update(rows, ["embedding", "embedding_model"])
            last_pk = rows[-1].pk
            done += len(rows)
            show(progress_line(done, total, started))
        show("\n")
        self.stdout.write(f"Re-embedded {done} engram(s) with {MODEL_ID}.")
