from __future__ import annotations

from django.apps import AppConfig


class PatternsConfig(AppConfig):
    name = "patterns"
    verbose_name = "Success patterns"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Plug into memory without memory importing us: MCP tools, the prompt-proposal review
        kind and inject's consider bucket (off per owner until turned on)."""
        from memory.integrations.mcp import tools_register
        from memory.models import ReviewItem
        from memory.services.consider import consider_provider_register
        from memory.services.review import kind_register
        from patterns.integrations.mcp import pattern_tools
        from patterns.services.feedback import prompt_proposal_apply
        from patterns.services.settings import consider_lines

        tools_register(pattern_tools)
        kind_register(
            ReviewItem.Kind.PROMPT,
            actions=("defer", "approve", "reject"),
            apply=prompt_proposal_apply,
        )
        consider_provider_register(consider_lines)
