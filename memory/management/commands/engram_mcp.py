"""Serve Engram over MCP (stdio) for the API token in ENGRAM_TOKEN."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.integrations.mcp import TokenInvalid, serve


class Command(BaseCommand):
    help = (
        "Serve Engram's MCP tools over stdin/stdout, acting for the API token in ENGRAM_TOKEN. "
        "Configure your MCP client to run `python manage.py engram_mcp`."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            serve(os.environ.get("ENGRAM_TOKEN"))
        except TokenInvalid as exc:
            raise CommandError(str(exc)) from None
