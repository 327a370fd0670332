"""Who sees which subjects (`visible_to`, see governance.kernel.querysets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Q

from governance.kernel.querysets import PrincipalQuerySet

if TYPE_CHECKING:
    from governance.kernel.principals import Principal


class SubjectQuerySet(PrincipalQuerySet):
    """A person's memory: agents whose manifest enables long-term memory, and only the named
    agents once an operator restricted the subject."""

    view_perm = "memory.view_subject"

    def for_agent(self, principal: Principal) -> SubjectQuerySet:
        from memory.subjects.access import long_term_enabled

        agent = principal.agent
        if not long_term_enabled(agent):
            return self.none()
        return self.filter(Q(allowed_agents=None) | Q(allowed_agents=agent)).distinct()
