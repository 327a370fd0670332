"""Broker settings an operator gets wrong quietly: a visibility timeout shorter than the longest
task makes Redis redeliver a task that is still running."""

from __future__ import annotations

from django.conf import settings as live
from django.core import checks


def test_the_default_visibility_timeout_outlasts_the_longest_task():
    assert live.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] > live.CELERY_TASK_TIME_LIMIT
    assert (
        live.CELERY_BROKER_TRANSPORT_OPTIONS["visibility_timeout"] < 3600
    )  # a stranded task waits minutes, not an hour


def test_a_visibility_timeout_shorter_than_the_time_limit_is_reported(settings):
    settings.CELERY_VISIBILITY_TIMEOUT = 300
    settings.CELERY_TASK_TIME_LIMIT = 600

    found = [message.id for message in checks.run_checks(tags=["celery"])]

    assert "governance.W005" in found
