from __future__ import annotations

from django.apps import AppConfig


class DialecticConfig(AppConfig):
    name = "dialectic"
    verbose_name = "Dialectic consolidation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Plug into memory without memory importing this app: the synthesis review kind and
        the MCP tools."""
        from dialectic.integrations.mcp import tools
        from dialectic.services import publish
        from memory.integrations.mcp import tools_register

        publish.review_kinds_register()
        tools_register(tools)
