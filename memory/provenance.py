"""Memory writes governed like tool calls: where an agent may write, and what each item keeps of
who wrote it and through which work (issue 34 point 1).

An agent's write into the fleet's memory is a claim other agents will read as knowledge, so it is
checked against the agent's contract before anything is stored (memory/reach.py ``WriteReach``):

* a learning or a clarification goes to the agent's own domain or a domain its manifest's
  ``memory.shared.write_namespaces`` names;
* a watch note (served to every agent) needs ``memory.shared.watch_notes``, and replaces only a
  note of the same agent;
* a gate result drives the reuse scores that promote learnings, so an agent records one only for
  a story it holds work on: one of its jobs (the story in ``payload.story``, or the job's own id,
  as memory/rag.py names a job's story) or one of its sessions (``story``).

A write outside is ``Forbidden`` (403; the API edge audits the attempt as ``access.refused``) and
nothing is written. Operators write with their model permission, as before. The job or session an
agent names as the item's origin must be its own: naming another agent's is refused the same way.
Each stored item keeps its author, job and session (memory/models/provenance.py).
"""

from __future__ import annotations

import contextlib
import uuid
from typing import TYPE_CHECKING, Any

from django.db.models import Q

from agents.models import Job
from governance.kernel.exceptions import Forbidden
from governance.kernel.principals import Principal
from memory.reach import write_reach_of

if TYPE_CHECKING:
    from agents.models import Agent


def check_domain_write(actor: Principal, domain: str, *, what: str) -> None:
    """Refuse an agent's write of ``what`` into ``domain`` outside its write reach."""
    reach = write_reach_of(actor)
    if reach.allows(domain):
        return
    grants = ", ".join(reach.domains) or "none"
    raise Forbidden(
        f"This agent may not write {what} into domain {domain!r}: its manifest lets it write into its own domain "
        f"({reach.own}) and memory.shared.write_namespaces ({grants})."
    )


def check_watch_note_write(actor: Principal) -> None:
    """Refuse an agent whose manifest does not grant fleet-wide watch notes."""
    if not write_reach_of(actor).watch_notes:
        raise Forbidden(
            "A watch note is served to every agent: an agent publishes one only when its manifest says "
            "memory.shared.watch_notes: true."
        )


def check_note_owner(actor: Principal, author_id: int | None) -> None:
    """An agent replaces only its own watch note (an operator's or another agent's stays theirs)."""
    if actor.agent is not None and author_id != actor.agent.pk:
        raise Forbidden("A watch note of that name exists and was not written by this agent: choose another name.")


def _session_model() -> Any:
    """The session model, through the relation memory declares to it (memory/models/provenance.py):
    memory sits beside sessions, so it names the model by app label rather than importing it."""
    from memory.models import Learning

    return Learning._meta.get_field("session").related_model


def holds_work_on(agent: Agent, story: str) -> bool:
    """Whether ``agent`` has a job or a session for ``story``."""
    jobs = Job.objects.filter(agent=agent)
    named = Q(payload__story=story)
    with contextlib.suppress(ValueError):  # a job's id is its story when its payload names none
        named |= Q(pk=uuid.UUID(story))
    if jobs.filter(named).exists():
        return True
    return bool(_session_model().objects.filter(agent=agent, story=story).exists())


def check_gate_result(actor: Principal, story: str) -> None:
    """Refuse an agent's gate result for a story it holds no work on."""
    if actor.agent is not None and not holds_work_on(actor.agent, story):
        raise Forbidden(
            f"This agent holds no job or session for story {story!r}: it records gate results only for its own work."
        )


def origin(actor: Principal, *, job: uuid.UUID | None = None, session: uuid.UUID | None = None) -> dict[str, Any]:
    """The provenance fields of an item ``actor`` writes: its author, and the job and session it
    names, each of them the author's own (an operator may name anyone's). An unknown id and
    another agent's get the same 403, so the answer says nothing of other agents' work."""
    fields: dict[str, Any] = {"author": actor.agent}
    models: tuple[tuple[str, Any, uuid.UUID | None], ...] = (("job", Job, job), ("session", _session_model(), session))
    for name, model, pk in models:
        if pk is None:
            continue
        found = model.objects.filter(pk=pk).first()
        if found is None or (actor.agent is not None and found.agent_id != actor.agent.pk):
            raise Forbidden(f"The {name} named as this item's origin is not one of this agent's.")
        fields[name] = found
    return fields
