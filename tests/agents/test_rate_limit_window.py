"""The rate limit's window counted by numbers (agents/tools.py ``count_and_record``, migration 0019):
each call of an (agent, tool) is numbered in the order of its time, and the calls of the last
minute are the newest number minus the first number inside the minute, plus one. Exact at the
window's edges, across concurrent callers, and for rows written before the numbers existed."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from agents.models import ToolCall
from agents.tools import count_and_record

TOOL = "mcp__supabase__execute_sql"


def record(agent, at, limit=3):
    return count_and_record(agent.pk, TOOL, limit, at)


@pytest.mark.django_db
def test_the_window_is_exact_at_its_edges(agent):
    start = timezone.now() - timedelta(minutes=10)
    for seconds in (0, 10, 30):
        call_id, _, _, _ = record(agent, start + timedelta(seconds=seconds))
        assert call_id is not None
    assert list(ToolCall.objects.order_by("called_at").values_list("seq", flat=True)) == [1, 2, 3]

    # At +60 s the call of +0 s is out of the window (it looks strictly after now - 60 s): 2 used.
    allowed, used, _, _ = record(agent, start + timedelta(seconds=60))
    assert (allowed is not None, used) == (True, 2)
    # Now +10, +30 and +60 are in the window: the limit of 3 is reached until +70 s.
    refused, used, retry_after, _ = record(agent, start + timedelta(seconds=65))
    assert (refused, used, retry_after) == (None, 3, 5)
    assert record(agent, start + timedelta(seconds=70))[0] is not None  # +10 left the window
    assert ToolCall.objects.count() == 5  # the refused call wrote nothing


@pytest.mark.django_db
def test_a_call_never_goes_back_in_time(agent):
    now = timezone.now()
    record(agent, now)
    _, _, _, called_at = record(agent, now - timedelta(seconds=5))  # a caller whose clock read earlier

    assert called_at == now
    assert list(ToolCall.objects.order_by("seq").values_list("called_at", flat=True)) == [now, now]


@pytest.mark.django_db
def test_rows_written_before_the_numbers_are_counted_one_by_one(agent):
    now = timezone.now()
    ToolCall.objects.bulk_create(
        [ToolCall(agent=agent, tool_id=TOOL, called_at=now - timedelta(seconds=s)) for s in (50, 40)]
    )  # no seq: rows of the release before

    first, used, _, _ = record(agent, now)
    assert (first is not None, used) == (True, 2)
    refused, used, retry_after, _ = record(agent, now + timedelta(seconds=1))
    assert (refused, used, retry_after) == (None, 3, 9)  # the row of -50 s frees a slot at +10 s
    # Once the old rows have left the window, the numbers count alone.
    later, used, _, _ = record(agent, now + timedelta(seconds=30))
    assert (later is not None, used) == (True, 1)


@pytest.mark.django_db(transaction=True)
def test_concurrent_callers_get_exactly_the_limit_and_contiguous_numbers(agent):
    answers: list[int | None] = []
    lock = threading.Lock()

    def caller() -> None:
        try:
            for _ in range(3):
                call_id, _, _, _ = count_and_record(agent.pk, TOOL, 20, timezone.now())
                with lock:
                    answers.append(call_id)
        finally:
            connection.close()

    threads = [threading.Thread(target=caller) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sum(1 for answer in answers if answer is not None) == 20
    assert answers.count(None) == 10
    rows = list(ToolCall.objects.order_by("seq").values_list("seq", "called_at"))
    assert [seq for seq, _ in rows] == list(range(1, 21))
    times = [at for _, at in rows]
    assert times == sorted(times)  # the numbers follow the times
