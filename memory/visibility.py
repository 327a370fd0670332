"""Who sees which memory rows (`visible_to`, see governance.kernel.querysets). Kept apart from
``memory/querysets.py``, whose page reads import the models these querysets are attached to."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db.models import Q

from governance.kernel.querysets import PrincipalQuerySet

if TYPE_CHECKING:
    from governance.kernel.principals import Principal


class LearningQuerySet(PrincipalQuerySet):
    """Learnings are the fleet's shared knowledge: every agent reads them (seed 004)."""

    owner_field = None
    view_perm = "memory.view_learning"


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
