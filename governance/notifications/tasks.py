"""Sending notifications: one task per delivery, retried with a doubling wait, a backstop, and the
digests of rules that tell a window at once."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from governance.notifications import digests, services


@shared_task(name="notifications.deliver", bind=True, ignore_result=True, acks_late=True, max_retries=None)
def deliver(self: Any, delivery_id: int) -> str:
    """One attempt; when it failed and may be tried again, the task comes back after the wait the
    delivery row holds. The row counts the attempts (NOTIFY_MAX_ATTEMPTS), not Celery, so a
    redelivered message cannot send more than that. A row that cannot be sent as stored is logged
    and marked failed by the attempt (``invalid``): the task ends, the backstop does not queue it
    again, and every other delivery goes out as usual."""
    outcome = services.attempt(delivery_id)
    if outcome.retry_in is not None:
        raise self.retry(countdown=outcome.retry_in)
    return outcome.status


@shared_task(name="notifications.resend_due", ignore_result=True, acks_late=True)
def resend_due() -> dict[str, int]:
    """Queue again the deliveries whose attempt is overdue (a broker outage, a lost worker)."""
    return services.resend_due()


@shared_task(name="notifications.send_digests", ignore_result=True, acks_late=True)
def send_digests() -> dict[str, Any]:
    """Tell each digest rule whose window is over what it held: one message per rule and window."""
    return digests.send_due()
