"""Who sees which learnings (`visible_to`, see governance.kernel.querysets)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from django.db.models import Q
from django.db.models.functions import Lower

from governance.kernel.querysets import PrincipalQuerySet

if TYPE_CHECKING:
    from governance.kernel.principals import Principal
    from memory.reach import Reach


class LearningQuerySet(PrincipalQuerySet):
    """Learnings are the fleet's knowledge, but an agent reads them within its manifest's memory
    reach (memory/reach.py): by id as in its searches and its step-0 block."""

    owner_field = None
    view_perm = "memory.view_learning"

    def for_agent(self, principal: Principal) -> Self:
        from memory.reach import reach_of  # it reads manifests (agents); the models import this module

        return self.within(reach_of(principal))

    def within(self, reach: Reach) -> Self:
        """The learnings ``reach`` lets an agent read: none without long-term memory; its own
        domain's, whatever their scope (archived ones too, which no search serves); with shared
        memory, the promoted (domain or global) learnings of the shared domains; never a held one. memory/search.py's
        `learnings_sql` applies this rule to its candidates in SQL, over live learnings only;
        tests/adversarial/test_reads_by_id.py holds the two to the same answers."""
        if not reach.limited:
            return self
        if not reach.long_term:
            return self.none()
        held = Q(held_at__isnull=False)  # held for a reviewer (memory/holds.py): served to no agent
        reached = Q(domain_key=reach.own)
        if reach.shared:
            shared = Q(scope__in=[self.model.Scope.DOMAIN, self.model.Scope.GLOBAL])
            if reach.shared_domains is not None:
                shared &= Q(domain_key__in=reach.shared_domains)
            reached |= shared
        return self.alias(domain_key=Lower("domain")).filter(reached).exclude(held)
