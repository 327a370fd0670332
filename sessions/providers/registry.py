"""Providers by name (seed 003 section 11, AIProviderRegistry).

Agent configurations store a provider name; this is the one place that turns it into code. The
providers are stateless, so one shared instance each is enough.
"""

from __future__ import annotations

from sessions.providers.anthropic import AnthropicProvider
from sessions.providers.base import Provider
from sessions.providers.ollama import OllamaProvider
from sessions.providers.openai import OpenAIProvider
from sessions.providers.scripted import ScriptedProvider

_PROVIDERS: dict[str, Provider] = {
    provider.name: provider
    for provider in (OpenAIProvider(), AnthropicProvider(), OllamaProvider(), ScriptedProvider())
}
PROVIDER_NAMES: tuple[str, ...] = tuple(_PROVIDERS)


def get_provider(name: str) -> Provider:
    """The provider called ``name``; KeyError naming the known ones otherwise."""
    try:
        return _PROVIDERS[name]
    except KeyError:
        raise KeyError(f"unknown AI provider {name!r}; known providers: {', '.join(PROVIDER_NAMES)}") from None
