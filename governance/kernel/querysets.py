"""The one access filter for reads: ``visible_to(principal)`` (NetBox's RestrictedQuerySet lesson).

Every app's querysets derive from :class:`PrincipalQuerySet` and say two things: which field
names the agent that owns a row (or that the rows are the fleet's shared knowledge), and which
permission lets a person see them. Edges then never filter by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from django.db import models

if TYPE_CHECKING:
    from governance.kernel.principals import Principal


class PrincipalQuerySet(models.QuerySet):
    owner_field: str | None = "agent"  # None: shared by the whole fleet (catalog, learnings)
    view_perm: str = ""

    def visible_to(self, principal: Principal) -> Self:
        """An agent sees its own rows (or every shared row); a person needs ``view_perm``; the
        system sees everything."""
        if principal.agent is not None:
            return self.for_agent(principal)
        if principal.user is None:
            return self
        return self if principal.has_perm(self.view_perm) else self.none()

    def for_agent(self, principal: Principal) -> Self:
        if self.owner_field is None:
            return self
        return self.filter(**{self.owner_field: principal.agent})
