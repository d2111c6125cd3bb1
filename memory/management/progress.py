"""A small progress bar for management commands (stderr, no dependency)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

WIDTH = 30


class ProgressBar:
    """Draws `label [#####.....] 42/100 (12.3/s)` on one line; silent when not a terminal."""

    def __init__(self, label: str, *, stream: TextIO | None = None, force: bool = False) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = force or self.stream.isatty()
        self.start = time.monotonic()
        self.last_draw = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self.last_draw < 0.1:
            return
        self.last_draw = now
        frac = done / total if total else 1.0
        filled = int(WIDTH * frac)
        rate = done / max(now - self.start, 1e-6)
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total} ({rate:.1f}/s)"
        )
        if done >= total:
            self.stream.write("\n")
        self.stream.flush()
