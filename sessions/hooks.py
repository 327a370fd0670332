"""What sessions ask of memory (a layer beside them, which they cannot import), declared as a
store of the kernel's registry and filled by memory's ``AppConfig.ready()``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from governance.kernel import registry
from governance.kernel.registry import Slot

if TYPE_CHECKING:
    from governance.kernel.principals import Principal


class SessionMemory(Protocol):
    """The step-0 block of seed 004 (memory/injection.py)."""

    def build_block(
        self, *, actor: Principal, story: str, domain: str, project: str, query_text: str, record: bool = True
    ) -> dict[str, Any]:
        """The block as Markdown (``markdown``) and as data; never raises for a failing source."""


SESSION_MEMORY: Slot[SessionMemory] = registry.slot("session_memory", "the step-0 memory block of a prompt (memory)")
