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
from typing import TYPE_CHECKING

from agents.registry import manifest_document
from governance.kernel.principals import Principal

if TYPE_CHECKING:
    from agents.models import Agent


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


@dataclass(frozen=True)
class WriteReach:
    """Where an agent writes into the fleet's memory; ``own`` None means no limit (an operator, who
    needs the model's add permission instead).

    Learnings and clarifications go to the agent's own domain, and to the domains its manifest's
    ``memory.shared.write_namespaces`` name (with ``shared.enabled``). A watch note is served in
    every agent's block, so publishing one is an operator's act, or an agent's whose manifest says
    ``memory.shared.watch_notes: true``. Gate results are not a domain's: an agent records them only
    for a story it holds work on (memory/provenance.py)."""

    own: str | None = None
    domains: tuple[str, ...] = ()
    watch_notes: bool = True

    @property
    def limited(self) -> bool:
        return self.own is not None

    def allows(self, domain: str) -> bool:
        """Pure: may this reach write into ``domain``?"""
        key = domain.strip().lower()
        return not self.limited or key == self.own or key in self.domains


UNLIMITED = WriteReach()


def writes_from_memory(memory: dict, domain: str) -> WriteReach:
    """Pure: the write reach a manifest's ``memory`` section (as stored) gives an agent of ``domain``."""
    shared = memory.get("shared") or {}
    enabled = bool(shared.get("enabled"))
    namespaces = (shared.get("write_namespaces") or []) if enabled else []
    return WriteReach(
        own=domain.lower(),
        domains=tuple(sorted({namespace_domain(n) for n in namespaces})),
        watch_notes=enabled and bool(shared.get("watch_notes")),
    )


def write_reach_of(principal: Principal) -> WriteReach:
    """The principal's write reach: its active manifest's, UNLIMITED for an operator or the system."""
    agent = principal.agent
    if agent is None:
        return UNLIMITED
    return writes_from_memory(_memory_section(agent), agent.domain)


def _memory_section(agent: Agent) -> dict:
    if agent.active_manifest_id is None:
        return {}
    return manifest_document(agent.active_manifest_id).get("memory") or {}


def reach_of(principal: Principal) -> Reach:
    """The principal's reach: its active manifest's (read once per process), EVERYTHING for an
    operator."""
    agent = principal.agent
    if agent is None:
        return EVERYTHING
    return from_memory(_memory_section(agent), agent.domain)


UNREAD = (
    "No agent reads domain {domain!r} (no active manifest of that domain enables long_term memory): "
    "this learning is served to no block, so it is never scored or promoted, and it is archived "
    "after 56 days unless an agent of the domain starts reading it."
)


def unread_warning(domain: str) -> str | None:
    """Why a new learning of ``domain`` would sit unread, or None. A story learning is served
    only within its own domain (shared memory serves promoted ones), so its readers are the
    agents of that domain whose active manifest enables long-term memory. One query."""
    from django.db.models.functions import Lower

    from agents.models import Agent

    readers = Agent.objects.alias(domain_key=Lower("domain")).filter(
        domain_key=domain.strip().lower(), active_manifest__document__memory__long_term__enabled=True
    )
    return None if readers.exists() else UNREAD.format(domain=domain)
