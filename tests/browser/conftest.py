"""Playwright against Django's live server, with the system Chromium.

Screenshots of every page go to $ENGRAM_SCREENSHOTS (or a fresh temporary folder), printed at
the end of the run.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Playwright's sync API runs an event loop in this thread; Django's ORM refuses to run inside
# one unless told it is safe (the live server runs requests in its own thread).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
SCREENSHOTS = Path(os.environ.get("ENGRAM_SCREENSHOTS") or tempfile.mkdtemp(prefix="engram-shots-"))


def chromium_path() -> str:
    return os.environ.get("ENGRAM_CHROMIUM") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if not Path(path).exists():
        pytest.skip(f"no Chromium at {path}; set ENGRAM_CHROMIUM")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=path, headless=True, args=CHROMIUM_ARGS
        )
        yield instance
        instance.close()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if SCREENSHOTS.exists() and any(SCREENSHOTS.iterdir()):
        terminalreporter.write_line(f"browser screenshots: {SCREENSHOTS}")
