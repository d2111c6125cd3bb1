from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from lib import embedder

        embedder.configure(threads=int(settings.ENGRAM_EMBEDDER_THREADS))

        from memory.integrations.mcp import tools_register
        from memory.integrations.mcp_learning import learning_tools
        from memory.models import ReviewItem
        from memory.services import learning
        from memory.services.review import kind_register

        kind_register(
            ReviewItem.Kind.SUPERSEDED,
            actions=("defer", "keep", "restore"),
            apply=learning.superseded_apply,
        )
        tools_register(learning_tools)
