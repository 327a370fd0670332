"""What agents asks of the apps above it, declared as stores of the kernel's registry.

Agents cannot import memory or sessions (they sit a layer above): jobs ask memory for their
ragContext through ``JOB_MEMORY``, and the platform's events reach sessions' EVENT automations
through ``PLATFORM_EVENTS``. The apps fill them in their ``AppConfig.ready()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from governance.kernel import registry
from governance.kernel.registry import Listeners, Slot

if TYPE_CHECKING:
    from agents.models import Job
    from governance.kernel.principals import Principal


class JobMemory(Protocol):
    """Memory's side of a job (memory/rag.py)."""

    def context_for_job(self, job: Job, *, actor: Principal) -> dict[str, Any]:
        """The ragContext of a job's first lease, its injections recorded as served to ``actor``."""

    def record_gate(self, job: Job, data: Any, *, actor: Principal) -> Any:
        """The gate result a job's result reports, for its story's reuse scores."""


# ``listener(event, subject, facts, depth)``, in the event's transaction, after the job triggers.
EventListener = Callable[[str, str, dict[str, Any], int], None]

JOB_MEMORY: Slot[JobMemory] = registry.slot("job_memory", "the ragContext and gate results of jobs (memory)")
PLATFORM_EVENTS: Listeners[EventListener] = registry.listeners(
    "platform_events", "every platform event, after its job triggers (sessions' EVENT automations)"
)
JOB_FINISHED: Listeners[Callable[[Job], None]] = registry.listeners(
    "job_finished", "a job that reached a final status, whoever ended it (job.finished triggers)"
)
