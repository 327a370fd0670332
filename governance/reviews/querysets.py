"""Reads of the reviewer inbox."""

from __future__ import annotations

from governance.kernel.querysets import PrincipalQuerySet


class ReviewItemQuerySet(PrincipalQuerySet):
    """An agent sees the items opened about it (to follow its own requests); reviewers see the inbox."""

    view_perm = "governance.view_reviewitem"
