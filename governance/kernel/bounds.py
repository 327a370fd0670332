"""Bounds of the counts and times callers send, shared by every app's schemas. Pure: no Django.

Each bound lies inside what PostgreSQL and Python hold, so that a value that passed validation can
never overflow a column, an interval or a datetime later, in a request or in a periodic task: a
job timeout of 10**15 ms once made every write to its job a 500 and stopped the job sweeper for
the whole fleet. Out of bounds is a 422 naming the field (README, *Numbers and times*).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator, Field

MAX_COUNT = 1_000_000_000  # tokens, documents, calls, retries, errors: inside PostgreSQL's integer (2**31 - 1)
MAX_UTC_OFFSET = timedelta(hours=16)  # PostgreSQL refuses a zone offset of 16 hours or more


def storable_time(value: datetime) -> datetime:
    """A time PostgreSQL stores: a zone offset under 16 hours (psycopg sends the offset as given,
    and ``+16:00`` is refused), and inside Python's years 1 to 9999 once in UTC."""
    offset = value.utcoffset()
    if offset is None:
        return value
    if abs(offset) >= MAX_UTC_OFFSET:
        raise ValueError("the zone offset must be between -15:59 and +15:59")
    try:
        value.astimezone(UTC)
    except OverflowError as exc:
        raise ValueError("the time must fall between the years 1 and 9999 in UTC") from exc
    return value


Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Moment = Annotated[datetime, AfterValidator(storable_time)]
