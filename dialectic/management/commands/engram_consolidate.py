"""Run every consolidation stage now and print what each produced."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dialectic.services.consolidation import consolidate
from memory.management.owner import resolve_owner


class Command(BaseCommand):
    help = (
        "Consolidate observed tool use now: embed new observations, cluster them, refresh "
        "theses, find antitheses, write syntheses (Q-gated) and propose them for review."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", help="Only this owner (default: every owner).")

    def handle(self, *args: Any, **options: Any) -> None:
        owner = resolve_owner(options["user"]) if options.get("user") else None
        started = time.perf_counter()
        counts = consolidate(owner=owner)
        seconds = time.perf_counter() - started
        out = self.stdout
        out.write(f"observations embedded:   {counts.embedded}")
        if counts.skipped:
            out.write(f"observations skipped:    {counts.skipped} (no text; see below)")
        out.write(
            f"observations clustered:  {counts.clustered} ({counts.clusters_created} new clusters)"
        )
        out.write(f"theses created/updated:  {counts.theses}")
        out.write(f"antitheses found:        {counts.antitheses}")
        out.write(
            f"syntheses written:       {counts.syntheses} ({counts.accepted} accepted, "
            f"{counts.reviews} sent to review)"
        )
        for line in counts.details:
            out.write(f"  {line}")
        out.write(f"done in {seconds:.1f} s")
