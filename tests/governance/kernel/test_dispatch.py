"""Tasks are queued after commit, never for a rolled-back change, and a broker outage never fails
the request that asked for the work. Messages are read back from the real broker."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from controlplane.celery import app
from governance.kernel import dispatch, queues
from tests.support.processes import sending_to

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def received() -> Iterator[Callable[[], list[tuple[str, list]]]]:
    """A fresh queue on the broker the tests use; the function drains it: (task name, args)."""
    name = f"test-dispatch-{uuid.uuid4().hex[:8]}"
    saved = app.conf.task_default_queue
    app.conf.task_default_queue = name

    def drain() -> list[tuple[str, list]]:
        """Every queue of the instance: tasks go to them by kind (governance/kernel/queues.py)."""
        messages = []
        with app.connection_for_read() as connection:
            for kind in queues.KINDS:
                queue = connection.SimpleQueue(queues.queue_name(name, kind))
                try:
                    while True:
                        try:  # a send is done once it returns: what was sent is there
                            message = queue.get_nowait()
                        except queue.Empty:
                            break
                        messages.append((message.headers["task"], message.payload[0]))
                        message.ack()
                finally:
                    queue.close()
        return messages

    try:
        yield drain
    finally:
        app.conf.task_default_queue = saved


def test_a_task_is_queued_only_once_its_transaction_commits(received):
    with transaction.atomic():
        dispatch.after_commit("memory.embed", "learning", [1, 2])
        assert received() == []

    assert received() == [("memory.embed", ["learning", [1, 2]])]


def queue_then_fail(*args: object) -> None:
    with transaction.atomic():  # a savepoint when nested
        dispatch.after_commit("sessions.tick_agent", *args)
        raise RuntimeError("rolled back")


def test_nothing_is_queued_for_a_change_that_rolled_back(received):
    with transaction.atomic():
        dispatch.after_commit("sessions.tick_agent", 1)
        with pytest.raises(RuntimeError):
            queue_then_fail(2)
    with pytest.raises(RuntimeError):
        queue_then_fail(3)

    assert received() == [("sessions.tick_agent", [1])]


def test_a_timer_is_queued_with_its_time(received):
    at = timezone.now() + timedelta(minutes=5)

    dispatch.after_commit("sessions.fire_timer", "s-1", "NetworkAvailable", at.isoformat(), eta=at)

    with app.connection_for_read() as connection:
        queue = connection.SimpleQueue(queues.queue_name(app.conf.task_default_queue, queues.TICK))
        message = queue.get(block=True, timeout=2)
        message.ack()
        queue.close()
    assert message.headers["eta"] == at.isoformat()


def test_a_broker_outage_is_logged_and_the_caller_goes_on(caplog):
    # The pools start afresh on the way in and out: a closed one would refuse every later send of the run.
    with (
        sending_to(app.conf.task_default_queue, "redis://127.0.0.1:1/0"),
        caplog.at_level(logging.WARNING, logger="governance.kernel.dispatch"),
    ):
        assert dispatch.send("sessions.tick") is False
    assert "could not queue sessions.tick" in caplog.text
