"""Cron expressions (scheduled automations, job triggers): the five fields an operator or agent writes, read
the way Celery beat reads them, and the first run after a moment.

Celery's own parser (``celery.schedules.crontab``) is the one used, so an expression accepted
here is one django-celery-beat's ``CrontabSchedule`` (where the fields are kept) runs the same
way; no Django imports, so the rule is tested on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime, tzinfo

from celery.schedules import crontab

NAMES = ("minute", "hour", "day of month", "month", "day of week")


@dataclass(frozen=True)
class Cron:
    """One expression, field by field, in the order a crontab line has them."""

    minute: str
    hour: str
    day_of_month: str
    month_of_year: str
    day_of_week: str

    def __str__(self) -> str:
        return " ".join(getattr(self, field.name) for field in fields(self))

    def as_crontab(self) -> crontab:
        return crontab(
            minute=self.minute,
            hour=self.hour,
            day_of_month=self.day_of_month,
            month_of_year=self.month_of_year,
            day_of_week=self.day_of_week,
        )


def parse(text: str) -> Cron:
    """``"0 9 * * 1-5"`` as a Cron; a ValueError that names the faulty field otherwise (the
    message is shown to the caller as it is)."""
    parts = text.split()
    if len(parts) != len(NAMES):
        raise ValueError(
            f"a cron expression has 5 fields (minute hour day-of-month month day-of-week), not {len(parts)}"
        )
    cron = Cron(*parts)
    for name, field in zip(NAMES, fields(cron), strict=True):
        try:
            crontab(**{field.name: getattr(cron, field.name)})
        except (ValueError, IndexError) as exc:
            raise ValueError(f"{name} field {getattr(cron, field.name)!r}: {exc}") from exc
    return cron


def next_after(cron: Cron, moment: datetime, zone: tzinfo) -> datetime:
    """The first time strictly after ``moment`` that ``cron`` names, read as wall-clock time in
    ``zone`` (an aware datetime in that zone)."""
    local = moment.astimezone(zone)
    start, delta, _ = cron.as_crontab().remaining_delta(local, tz=zone)
    following: datetime = (start + delta).replace(tzinfo=None)
    # The sum is a wall-clock time: attach the zone again, so a DST change in between is honoured.
    return following.replace(tzinfo=zone)
