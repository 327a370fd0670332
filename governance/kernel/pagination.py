"""Pagination over tables that grow without bound (contract checks, sessions and their messages,
gateway and tool calls).

Django's paginator asks ``COUNT(*)`` of the whole filtered list on every page to print its page
numbers: at ten million checks that one count costs seconds, far more than the page it numbers.
Here the count is the planner's estimate when the list is long, and exact while it is short, so
a page costs what it shows (bench/scale.py measures it).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.paginator import Paginator
from django.db import connections
from django.db.models import QuerySet
from django.utils.functional import cached_property

# Lists the planner expects up to this long are counted exactly.
EXACT_UP_TO = 10_000


class EstimatedCountPaginator(Paginator):
    """A paginator whose count is PostgreSQL's estimate of the query's rows when the planner
    expects more than ``EXACT_UP_TO``, and exact otherwise (by a count that stops there, in case
    the planner guessed low): the page numbers of a long list are then approximate, which a list
    read newest first can afford. The estimate costs an ``EXPLAIN``; counting a filter that keeps
    a tenth of ten million checks costs seconds of random reads."""

    @cached_property
    def count(self) -> int:
        found = self.object_list
        if not isinstance(found, QuerySet):
            return super().count
        estimate = estimated_rows(found)
        if estimate > EXACT_UP_TO:
            return estimate
        bounded = found.order_by()[: EXACT_UP_TO + 1].count()
        return bounded if bounded <= EXACT_UP_TO else max(bounded, estimate)


def estimated_rows(found: QuerySet[Any]) -> int:
    """The planner's estimate of how many rows ``found`` returns (``EXPLAIN``, nothing run)."""
    sql, params = found.order_by().query.sql_with_params()
    with connections[found.db].cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    if isinstance(plan, str):  # json comes back as text when no loader is set for it
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])
