"""Which learnings an agent's manifest lets it read (seed 001's ``memory`` section).

Learnings are the fleet's knowledge, but an agent reads them through its contract:

* ``long_term.enabled``: learnings are the platform's long-term memory. Off (the default), the
  agent is served none: its step-0 block says so in the learnings section, and a learning search
  is refused (403), as a subject's memory is (memory/subjects/access.py).
* its own domain (the manifest's ``domain``): every live learning of it, whatever its scope.
* ``shared.enabled`` (inter-agent memory): off (the default), that is all. On, the agent also
  reads the *shared* learnings of other domains, those promoted past their story (scope
  ``domain`` or ``global``): a story learning stays with its story's domain.
* ``shared.namespaces``: the domains whose shared learnings it reads. A namespace names a domain,
  optionally with a topic after a colon (seed 001's example: ``seo:scores``); learnings carry no
  topic, so a namespace grants its whole domain. No namespace listed: every domain.

The same reach holds wherever an agent reads learnings: the search and the step-0 block filter
their candidates with it in SQL (memory/search.py ``learnings_sql``), and a read by id goes through
``Learning.objects.visible_to`` (memory/querysets.py ``within``), where a learning outside it is
404, word for word the answer for one that does not exist.

``long_term.storage`` says nothing here: every value the manifest accepts is served by the same
PostgreSQL store (agents/manifest.py ``LongTermMemory``). An agent without an active manifest has
no memory section, so it gets the defaults: nothing. Operators are not agents: they read
everything their permissions allow.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.registry import manifest_document
from governance.kernel.principals import Principal


@dataclass(frozen=True)
class Reach:
    """What an agent reads; ``own`` None means no limit (an operator)."""

    long_term: bool = True
    own: str | None = None
    shared: bool = True
    shared_domains: tuple[str, ...] | None = None  # None: every domain's shared learnings

    @property
    def limited(self) -> bool:
        return self.own is not None


EVERYTHING = Reach()


def namespace_domain(namespace: str) -> str:
    """Pure: the domain a namespace names, ``seo`` for ``seo:scores``."""
    return namespace.split(":", 1)[0].strip().lower()


def from_memory(memory: dict, domain: str) -> Reach:
    """Pure: the reach a manifest's ``memory`` section (as stored) gives an agent of ``domain``."""
    shared = memory.get("shared") or {}
    namespaces = shared.get("namespaces") or []
    return Reach(
        long_term=bool((memory.get("long_term") or {}).get("enabled")),
        own=domain.lower(),
        shared=bool(shared.get("enabled")),
        shared_domains=tuple(sorted({namespace_domain(n) for n in namespaces})) or None,
    )


def reach_of(principal: Principal) -> Reach:
    """The principal's reach: its active manifest's (read once per process), EVERYTHING for an
    operator."""
    agent = principal.agent
    if agent is None:
        return EVERYTHING
    if agent.active_manifest_id is None:
        return from_memory({}, agent.domain)
    return from_memory(manifest_document(agent.active_manifest_id).get("memory") or {}, agent.domain)
