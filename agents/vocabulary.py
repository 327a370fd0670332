"""The fleet's open vocabularies, as far as they can be judged without a database. Pure: no Django.

Domains, job intents, entity types and agent roles were closed lists in the seeds (StrEnums), so
an agent author from another company met a 422 for ``summarize_ticket`` or ``domain: support``.
They are registries now, which operators grow and retire (agents/registries.py). What a value of
any registry looks like is decided here, once, for manifests, envelopes, learnings and the
registries' own API: a lowercase slug, bounded. Whether a value *is* in a registry needs the
database, so that check lives in the services that take values (agents/registries.py ``check``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BeforeValidator, StringConstraints

from governance.kernel import invisible

VALUE_PATTERN = r"^[a-z][a-z0-9_-]*$"
MAX_VALUE_LENGTH = 50
MAX_LABEL_LENGTH = 200
VALUE_SHAPE = "lowercase letters, digits, _ and -, starting with a letter"


class Registry(StrEnum):
    """The four registries, by the names the API and the command use."""

    DOMAINS = "domains"
    INTENTS = "intents"
    ENTITY_TYPES = "entityTypes"
    ROLES = "roles"

    @property
    def singular(self) -> str:
        """What one value is called in a sentence: ``unknown entity type 'ticket'``."""
        return {"domains": "domain", "intents": "intent", "entityTypes": "entity type", "roles": "role"}[self.value]


def _lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


# A value as an operator adds it to a registry: exactly as it will be stored, no case folding.
ExactValue = Annotated[str, StringConstraints(min_length=1, max_length=MAX_VALUE_LENGTH, pattern=VALUE_PATTERN)]
# A value as authors write it in manifests and envelopes: any case, stored lowercase (as the seeds'
# enums were read). The constraints sit inside, so the JSON Schema shows them.
Value = Annotated[ExactValue, BeforeValidator(_lower)]


def label_problem(label: str) -> str | None:
    """Why ``label`` cannot name a value (it is shown on pages and in forms), or None."""
    if not label.strip():
        return "a label is not empty"
    if len(label) > MAX_LABEL_LENGTH:
        return f"a label is at most {MAX_LABEL_LENGTH} characters"
    if any(hidden for _, hidden in invisible.split(label)):
        return "a label has no control, format or other hidden characters"
    return None


def _label(value: Any) -> Any:
    if isinstance(value, str):
        problem = label_problem(value)
        if problem:
            raise ValueError(problem)
        return value.strip()
    return value


Label = Annotated[Annotated[str, StringConstraints(max_length=MAX_LABEL_LENGTH)], BeforeValidator(_label)]


def default_label(value: str) -> str:
    """The label of a value added without one: ``summarize_ticket`` -> ``Summarize ticket``."""
    return value.replace("_", " ").replace("-", " ").capitalize()


def how_to_add(registry: Registry, value: str) -> str:
    return f"an operator adds it with POST /api/v1/registries/{registry} or `manage.py registry add {registry} {value}`"


def unknown_message(registry: Registry, value: str) -> str:
    return f"unknown {registry.singular} {value!r}: not in the {registry} registry; {how_to_add(registry, value)}"


def retired_message(registry: Registry, value: str) -> str:
    return (
        f"{registry.singular} {value!r} is retired in the {registry} registry: what already uses it keeps it, "
        f"nothing new may; an operator reinstates it with POST /api/v1/registries/{registry} "
        f"or `manage.py registry add {registry} {value}`"
    )


# The seeds' closed lists, as the registries start (migration agents 0016 and every migrate).
SEED_VALUES: dict[Registry, tuple[tuple[str, str], ...]] = {
    Registry.DOMAINS: (
        ("core", "Core"),
        ("infra", "Infra"),
        ("data", "Data"),
        ("seo", "SEO"),
        ("rag", "RAG"),
        ("cart", "Cart"),
        ("aicos", "AICOS"),
    ),
    Registry.INTENTS: (
        ("seo_audit", "SEO audit"),
        ("content_generate", "Content generation"),
        ("rag_reindex", "RAG reindex"),
        ("kg_diagnose", "Knowledge graph diagnosis"),
        ("routes_sync", "Routes sync"),
        ("sitemap_build", "Sitemap build"),
    ),
    Registry.ENTITY_TYPES: (
        ("gamme", "Gamme"),
        ("vehicle", "Vehicle"),
        ("article", "Article"),
        ("page", "Page"),
        ("all", "All"),
    ),
    Registry.ROLES: (
        ("architect", "Architect"),
        ("analyzer", "Analyzer"),
        ("executor", "Executor"),
        ("validator", "Validator"),
        ("orchestrator", "Orchestrator"),
    ),
}
