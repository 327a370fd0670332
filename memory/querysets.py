"""Who sees which learnings (`visible_to`, see governance.kernel.querysets)."""

from __future__ import annotations

from governance.kernel.querysets import PrincipalQuerySet


class LearningQuerySet(PrincipalQuerySet):
    """Learnings are the fleet's shared knowledge: every agent reads them (seed 004)."""

    owner_field = None
    view_perm = "memory.view_learning"
