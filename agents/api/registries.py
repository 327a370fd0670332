"""Registries router (/api/v1/registries): the fleet's vocabularies of domains, job intents, entity
types and agent roles. Agents and operators read them (what a manifest, an envelope or a learning
may name); operators with a registry's permissions add, relabel and retire values, through the
one service of agents/registries.py, as the admin and ``manage.py registry`` do."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Status

from agents import registries
from agents.models.registries import RegistryEntry
from agents.schemas import RegistriesOut, RegistryLabelIn, RegistryValueIn, RegistryValueOut
from agents.vocabulary import Registry
from governance.kernel.access import agent_or_perm
from governance.kernel.auth import caller

router = Router(tags=["registries"])


def _out(entry: RegistryEntry) -> dict:
    return {"value": entry.value, "label": entry.label, "retired": entry.retired}


@router.get("", operation_id="list_registries", response=RegistriesOut)
def list_registries(request: HttpRequest) -> dict:
    """Every value of every registry, retired ones marked (rows may still carry them); one query.
    Agents read them; an operator needs the view permission of each registry."""
    principal = caller(request)
    for registry in Registry:
        agent_or_perm(principal, registries.permission(registry, "view"))
    return {
        registry.value: [{"value": e.value, "label": e.label, "retired": e.retired} for e in entries]
        for registry, entries in registries.listing().items()
    }


@router.post("/{registry}", operation_id="add_registry_value", response={200: RegistryValueOut, 201: RegistryValueOut})
def add_registry_value(request: HttpRequest, registry: str, data: RegistryValueIn) -> Status:
    """Add a value: 201 the new item; 200 when the registry has it already (a retired one is
    reinstated, which also needs the change permission); 403 for an agent key or an operator
    without the registry's add permission; 404 for a registry other than domains, intents,
    entityTypes and roles; 422 for a value that is not a lowercase slug of at most 50 characters."""
    principal = caller(request)
    registries.refuse_agents(principal)  # before the registry's name: an agent learns nothing here
    named = registries.registry_named(registry)
    entry, outcome = registries.add_value(named, data.value, label=data.label, actor=principal)
    return Status(201 if outcome == registries.ADDED else 200, _out(entry))


@router.patch("/{registry}/{value}", operation_id="relabel_registry_value", response=RegistryValueOut)
def relabel_registry_value(request: HttpRequest, registry: str, value: str, data: RegistryLabelIn) -> dict:
    """Give a value another label (the value itself never changes): operators with the registry's
    change permission; 404 for a value the registry does not have."""
    principal = caller(request)
    registries.refuse_agents(principal)
    named = registries.registry_named(registry)
    return _out(registries.relabel_value(named, value, data.label, actor=principal))


@router.post("/{registry}/{value}/retire", operation_id="retire_registry_value", response=RegistryValueOut)
def retire_registry_value(request: HttpRequest, registry: str, value: str) -> dict:
    """Retire a value: 200 (again 200 when it is retired already). Agents, jobs, learnings and
    triggers that have it keep it and stay readable and usable; new use of it is 422. Operators
    with the registry's change permission; 404 for a value the registry does not have."""
    principal = caller(request)
    registries.refuse_agents(principal)
    named = registries.registry_named(registry)
    return _out(registries.retire_value(named, value, actor=principal))
