"""Who sees which learnings (`visible_to`, see governance.kernel.querysets)."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Self

from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower

from governance.kernel.querysets import PrincipalQuerySet

if TYPE_CHECKING:
    from governance.kernel.principals import Principal
    from memory.reach import Reach
    from memory.search import Hit, LearningHit


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

    def nearest(
        self,
        vector: list[float],
        *,
        model: str,
        dimension: int,
        k: int = 5,
        domain: str | None = None,
        project: str | None = None,
        reach: Reach | None = None,
    ) -> list[LearningHit]:
        """Top-k live learnings within ``reach`` (memory/reach.py; every learning when None), sorted
        by cosine similarity, then reuse score (missing = 0.0), then newest date_created
        (INV-295-07, TC-NOM-07, TC-PLAN-03, TC-PLAN-05). The reach filters the candidates inside the
        index scan, as the domain does (the SQL: memory/search.py ``learnings_sql``)."""
        from memory import search
        from memory.reach import EVERYTHING

        params = search.learnings_params(
            search.vector_literal(vector), model=model, k=k, domain=domain, project=project, reach=reach or EVERYTHING
        )
        rows = search.run(search.learnings_sql(dimension), params, walk=True)
        return [search.LearningHit(pk, sim, Decimal(score), created) for pk, sim, score, created in rows]


class VeilleNoteQuerySet(models.QuerySet):
    def nearest(
        self,
        vector: list[float],
        *,
        model: str,
        dimension: int,
        k: int = 3,
        impacts: tuple[str, ...] | None = None,
        verdict: str | None = None,
        tags: list[str] | None = None,
    ) -> list[Hit]:
        """Top-k watch notes by similarity, filtered after the KNN by impact and verdict (TC-PLAN-04)
        and by tags: a note carrying every tag asked for, in any case (authors write them freely)."""
        from memory import search

        params = search.veille_params(
            search.vector_literal(vector), model=model, k=k, impacts=impacts, verdict=verdict, tags=tags
        )
        return [search.Hit(pk, sim) for pk, sim in search.run(search.veille_sql(dimension), params)]


class ClarificationQuerySet(models.QuerySet):
    def nearest(
        self,
        vector: list[float],
        *,
        model: str,
        dimension: int,
        k: int = 3,
        domain: str | None = None,
        project: str | None = None,
    ) -> list[Hit]:
        """Top-k clarifications by similarity, of one domain and project when given (M-02: the
        search outside step 0, whose own retrieval is an exact filter, H-02)."""
        from memory import search

        params = search.clarifications_params(
            search.vector_literal(vector), model=model, k=k, domain=domain, project=project
        )
        return [search.Hit(pk, sim) for pk, sim in search.run(search.clarifications_sql(dimension), params)]
