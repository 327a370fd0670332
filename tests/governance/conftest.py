"""Fixtures of the governance tests: the shipped contract catalog."""

from __future__ import annotations

import pytest

from governance.contracts import services as contracts
from governance.kernel.principals import SYSTEM


@pytest.fixture
def catalog(db) -> contracts.ImportReport:
    """The 70 contracts of the shipped catalog (seed 000), imported as the command does."""
    return contracts.import_catalog(contracts.CATALOG.read_text(encoding="utf-8"), actor=SYSTEM)
