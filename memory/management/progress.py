"""The progress bar of long management commands, drawn by rich (stderr; silent off a terminal)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

ProgressCallback = Callable[[int, int], None]


@contextmanager
def progress_bar(label: str, *, enabled: bool = True) -> Iterator[ProgressCallback]:
    """Yields a `(done, total)` callback that moves one bar."""
    console = Console(file=sys.stderr)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=not enabled or not console.is_terminal,
        transient=False,
    ) as progress:
        task = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=max(total, done))

        yield update
