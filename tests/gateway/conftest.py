"""Each test starts with no upstream session open in this process (stdio commands exit)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway import upstream


@pytest.fixture(autouse=True)
def _fresh_upstream_sessions() -> Iterator[None]:
    yield
    upstream.POOL.close_all()
