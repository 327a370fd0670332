"""System checks for the memory app's configuration."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Error, register

from memory.embeddings import local


@register()
def local_embedder_installed(app_configs: object, **kwargs: object) -> list[Error]:
    """The default backend needs the local embedder (requirements.txt has it), which a runtime-only install
    (requirements/runtime.txt) leaves out: without it every embedding would fail one row at a time, so the start
    stops here instead."""
    if settings.EMBEDDING_BACKEND != "local":
        return []
    missing = local.missing_packages()
    if not missing:
        return []
    return [
        Error(
            f"EMBEDDING_BACKEND is local but this install lacks {', '.join(missing)}.",
            hint=f"Install the local embedder ({local.INSTALL}), or embed through a server: "
            "EMBEDDING_BACKEND=ollama or openai, with EMBEDDING_URL.",
            id="memory.E001",
        )
    ]
