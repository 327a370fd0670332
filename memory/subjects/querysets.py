"""Who sees which subjects (`visible_to`, see governance.kernel.querysets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import connection, models
from django.db.models import Q

from governance.kernel.querysets import PrincipalQuerySet

if TYPE_CHECKING:
    from governance.kernel.principals import Principal
    from memory.search import Hit


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


class SubjectMemoryQuerySet(models.QuerySet):
    def nearest(self, vector: list[float], *, model: str, dimension: int, subject_id: int, k: int = 5) -> list[Hit]:
        """The subject's k memories nearest ``vector``. Subjects share one HNSW index: a subject of
        up to EXACT_UP_TO rows is scanned exactly; a larger one walks the index with its subject as
        the filter, falling back to the exact scan when fewer than k come back (memory/search.py)."""
        from memory import search

        params = search.subject_params(search.vector_literal(vector), model=model, subject_id=subject_id, k=k)
        with connection.cursor() as cursor:
            cursor.execute(search.SUBJECT_SIZE_SQL, params)
            (rows,) = cursor.fetchone()
        if rows > search.EXACT_UP_TO:
            found = search.run(search.subject_walk_sql(dimension), params, walk=True)
            if len(found) >= k:
                return [search.Hit(pk, sim) for pk, sim in found]
        with connection.cursor() as cursor:
            cursor.execute(search.subject_exact_sql(dimension), params)
            return [search.Hit(pk, sim) for pk, sim in cursor.fetchall()]
