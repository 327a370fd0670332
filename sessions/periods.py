"""Periods of data commands (seed 003, sections 9 and 10). Pure: no Django.

A CHAT command carries an absolute period (``{"start": iso, "end": iso}``) fixed when the user
wrote the message; an AUTOMATION command carries a relative one (``"offset_TYPE"``, e.g.
``"-1_DAY"``) so that every run of the automation reads "yesterday" as of that run.

A :class:`Calendar` says where days and weeks begin: a day starts at ``day_start_hour`` (a shop
whose day ends at 6 am counts 2 am as the previous day) and a week on ``week_start_day``.
Periods are half-open: ``start <= t < end``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any

from governance.kernel.bounds import storable_time

UNITS = ("DAY", "WEEK", "MONTH", "YEAR")
WEEKDAYS = ("MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY")
MAX_OFFSET = 10_000  # far beyond any sensible period, still inside what `date` can represent
_RELATIVE = re.compile(r"^([+-]?\d{1,5})_(DAY|WEEK|MONTH|YEAR)$")


@dataclass(frozen=True)
class Calendar:
    """Where a day and a week begin (the seed's AppConfig dayStartHour / weekStartDay)."""

    day_start_hour: int = 0
    week_start_day: str = "MONDAY"

    def __post_init__(self) -> None:
        hour = self.day_start_hour
        if isinstance(hour, bool) or not isinstance(hour, int) or not 0 <= hour <= 23:
            raise ValueError(f"day_start_hour must be an integer from 0 to 23, not {hour!r}")
        day = str(self.week_start_day).strip().upper()
        if day not in WEEKDAYS:
            raise ValueError(f"week_start_day must be one of {', '.join(WEEKDAYS)}, not {self.week_start_day!r}")
        object.__setattr__(self, "week_start_day", day)

    def business_date(self, now: datetime) -> date:
        """The day ``now`` belongs to: before the day start hour it is still the previous day."""
        return (now - timedelta(hours=self.day_start_hour)).date()

    def day_start(self, day: date, tz: tzinfo | None) -> datetime:
        return datetime.combine(day, time(self.day_start_hour), tzinfo=tz)

    def first_day(self, day: date, unit: str) -> date:
        """The first day of the DAY/WEEK/MONTH/YEAR that contains ``day``."""
        if unit == "WEEK":
            return day - timedelta(days=(day.weekday() - WEEKDAYS.index(self.week_start_day)) % 7)
        if unit == "MONTH":
            return day.replace(day=1)
        if unit == "YEAR":
            return day.replace(month=1, day=1)
        return day


@dataclass(frozen=True)
class RelativePeriod:
    """``offset`` units from the current one: ``-1_DAY`` is yesterday, ``0_WEEK`` this week."""

    offset: int
    unit: str

    @classmethod
    def parse(cls, text: str) -> RelativePeriod:
        match = _RELATIVE.match(text.strip().upper()) if isinstance(text, str) else None
        if match is None or abs(int(match.group(1))) > MAX_OFFSET:
            raise ValueError(
                f"a relative period is 'offset_TYPE' with TYPE in {'/'.join(UNITS)} and |offset| <= {MAX_OFFSET}"
                f" (e.g. '-1_DAY'), not {text!r}"
            )
        return cls(int(match.group(1)), match.group(2))

    def __str__(self) -> str:
        return f"{self.offset}_{self.unit}"

    def resolve(self, now: datetime, calendar: Calendar) -> Period:
        """The absolute period, seen from ``now`` (aware datetimes keep their time zone)."""
        first = _shift(calendar.first_day(calendar.business_date(now), self.unit), self.unit, self.offset)
        return Period(
            calendar.day_start(first, now.tzinfo), calendar.day_start(_shift(first, self.unit, 1), now.tzinfo)
        )

    def describe(self) -> str:
        """Plain English: today, yesterday, last week, 3 months ago, next year."""
        unit = self.unit.lower()
        if self.unit == "DAY":
            named = {0: "today", -1: "yesterday", 1: "tomorrow"}
        else:
            named = {0: f"this {unit}", -1: f"last {unit}", 1: f"next {unit}"}
        if self.offset in named:
            return named[self.offset]
        count = abs(self.offset)
        return f"{count} {unit}s ago" if self.offset < 0 else f"in {count} {unit}s"


@dataclass(frozen=True)
class Period:
    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.start >= self.end:
            raise ValueError(f"a period must end after it starts ({self.start.isoformat()} >= {self.end.isoformat()})")

    @classmethod
    def from_dict(cls, data: Any, *, tz: tzinfo | None = None) -> Period:
        """``{"start": iso, "end": iso}``; a time without zone is read in ``tz``."""
        if not isinstance(data, dict) or set(data) != {"start", "end"}:
            raise ValueError(f"an absolute period is {{'start': iso, 'end': iso}}, not {data!r}")
        return cls(_moment(data["start"], tz), _moment(data["end"], tz))

    def to_dict(self) -> dict[str, str]:
        return {"start": self.start.isoformat(), "end": self.end.isoformat()}

    def describe(self) -> str:
        return f"{self.start:%Y-%m-%d %H:%M} to {self.end:%Y-%m-%d %H:%M}"


def parse(value: Any, *, tz: tzinfo | None = None) -> RelativePeriod | Period:
    """A period as found in command params: a relative string or an absolute dict."""
    if isinstance(value, str):
        return RelativePeriod.parse(value)
    return Period.from_dict(value, tz=tz)


def to_absolute(value: Any, *, now: datetime, calendar: Calendar) -> dict[str, str]:
    """Any period as ``{"start": iso, "end": iso}``: relative ones are resolved from ``now``,
    absolute ones are validated and kept."""
    period = parse(value, tz=now.tzinfo)
    if isinstance(period, RelativePeriod):
        period = period.resolve(now, calendar)
    return period.to_dict()


def describe(value: Any) -> str:
    """A period in plain English, for summaries."""
    return parse(value).describe()


def _moment(value: Any, tz: tzinfo | None) -> datetime:
    """A period's bound, as the database can compare it (a zone offset under 16 hours)."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError as exc:
            raise ValueError(f"{value!r} is not an ISO 8601 date-time") from exc
    return storable_time(moment.replace(tzinfo=tz) if moment.tzinfo is None and tz is not None else moment)


def _shift(first: date, unit: str, offset: int) -> date:
    """Move the first day of a period by ``offset`` periods (months and years by calendar)."""
    if unit == "DAY":
        return first + timedelta(days=offset)
    if unit == "WEEK":
        return first + timedelta(weeks=offset)
    months = first.year * 12 + first.month - 1 + (offset * 12 if unit == "YEAR" else offset)
    return first.replace(year=months // 12, month=months % 12 + 1)
