"""Who reaches a person's memory. A subject's conversations and facts are personal data, so an
agent key alone is not enough:

* the agent's active manifest must enable ``memory.long_term`` (seed 001's memory section);
* when an operator restricted the subject to named agents, only those agents reach it, and to
  any other agent the subject does not exist (404: its key is often a person's name);
* every read by an agent is recorded, so an operator can tell who read a person's memory.

Operators go through their Django permissions instead.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from agents.models import Agent
from agents.registry import manifest_document
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden, InvalidInput, NotFound
from governance.kernel.principals import Principal
from governance.kernel.services import record
from memory.models import Subject

READ = "read"
WRITE = "write"
_OPERATOR_PERMS = {READ: "memory.view_subject", WRITE: "memory.change_subject"}


def long_term_enabled(agent: Agent) -> bool:
    if agent.active_manifest_id is None:
        return False
    memory = manifest_document(agent.active_manifest_id).get("memory") or {}
    return bool((memory.get("long_term") or {}).get("enabled"))


def subject_for(principal: Principal, key: str, *, access: str, purpose: str) -> Subject:
    """The subject ``key`` if ``principal`` may ``access`` (read or write) it; an agent's read is
    recorded with its ``purpose`` (search, system-prompt, ...)."""
    if principal.agent is None:
        perm = _OPERATOR_PERMS[access]
        if not principal.has_perm(perm):
            raise Forbidden(f"This needs the {perm} permission.")
        return _get(key)
    agent = principal.agent
    if not long_term_enabled(agent):
        raise Forbidden(
            f"The active manifest of {agent.agent_id} does not enable memory.long_term.", agent=agent.agent_id
        )
    subject = Subject.objects.visible_to(principal).filter(key=key).first()
    if subject is None:  # unknown, or restricted to other agents: the same answer, word for word
        raise NotFound(f"No subject {key!r}.")
    if access == READ:
        record(actor=principal, action=AuditAction.SUBJECT_READ, target=subject, purpose=purpose)
    return subject


def _get(key: str) -> Subject:
    subject = Subject.objects.filter(key=key).first()
    if subject is None:
        raise NotFound(f"No subject {key!r}.")
    return subject


# Not durable: the admin's change form calls it inside Django's own transaction.
@transaction.atomic
def restrict(subject: Subject, agent_ids: Iterable[str], *, actor: Principal) -> list[str]:
    """Only the named agents reach ``subject`` from now on; an empty list lifts the restriction."""
    if not actor.has_perm("memory.change_subject"):
        raise Forbidden("Restricting a subject needs the memory.change_subject permission.")
    wanted = sorted(set(agent_ids))
    agents = list(Agent.objects.filter(agent_id__in=wanted))
    unknown = sorted(set(wanted) - {agent.agent_id for agent in agents})
    if unknown:
        msg = f"unknown agents: {', '.join(unknown)}"
        raise InvalidInput(msg, errors=[{"loc": ["body", "agents"], "msg": msg, "type": "not_found"}])
    locked = Subject.objects.select_for_update().get(pk=subject.pk)
    before = sorted(locked.allowed_agents.values_list("agent_id", flat=True))
    locked.allowed_agents.set(agents)
    record(actor=actor, action=AuditAction.SUBJECT_ACCESS_RESTRICTED, target=locked, before=before, after=wanted)
    return wanted
