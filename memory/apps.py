from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = "Memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings

        from lib import embedder
        from memory.services import learning, maintenance

        embedder.configure(threads=int(settings.ENGRAM_EMBEDDER_THREADS))
        learning.review_kinds_register()
        maintenance.review_kinds_register()
