"""Reads of the contract catalog and of the checks."""

from __future__ import annotations

from governance.kernel.querysets import PrincipalQuerySet


class ContractQuerySet(PrincipalQuerySet):
    """The catalog is the fleet's shared reference."""

    owner_field = None
    view_perm = "governance.view_contract"


class ContractCheckQuerySet(PrincipalQuerySet):
    view_perm = "governance.view_contractcheck"
