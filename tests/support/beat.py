"""The beat schedule tests start from: transactional tests begin on a flushed database, without
the periodic tasks the data migrations seed."""

from __future__ import annotations

from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks


def heartbeat_every_second() -> None:
    """The heartbeat entry migration governance 0003 seeds, sent every second, and a running beat
    told to reload its schedule."""
    every_second, _ = IntervalSchedule.objects.get_or_create(every=1, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.update_or_create(
        name="heartbeat", defaults={"task": "governance.heartbeat", "interval": every_second, "enabled": True}
    )
    PeriodicTasks.update_changed()
