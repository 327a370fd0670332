"""Digests: a rule with a window tells what happened in it in one message ("192 new events from 12
agents"), with the counts by kind, the first items and their pages, and the inbox; an escalation
goes out at once all the same. Two runs at once never tell a window twice, and a receiver that
fails, or a window that cannot be told, stops no other rule.

Receivers are real HTTP servers on 127.0.0.1 (conftest); windows are ended by moving the held
events back in time, the one thing a test cannot wait for."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import F
from django_celery_beat.models import PeriodicTask

from governance.kernel.principals import SYSTEM, Principal
from governance.notifications import digests
from governance.notifications import services as notifications
from governance.notifications.models import TELLING, Delivery, DigestEntry, EventKind, NotificationRule
from governance.reviews import services as reviews
from tests.agents.test_job_lifecycle import result
from tests.agents.test_jobs import envelope
from tests.factories.agents import AgentFactory
from tests.governance.notifications.test_rules_and_deliveries import send_pending
from tests.support.manifests import manifest_text
from tests.support.volume import agents_of, mixed_inbox

INBOX = [
    EventKind.INBOX_VALIDATION,
    EventKind.INBOX_COMMUNICATION,
    EventKind.INBOX_TOOL_APPROVAL,
    EventKind.INBOX_PROMOTION,
]


def rule(admin_operator, receiver, *, name: str = "reviewers", digest_seconds: int = 60, **fields) -> NotificationRule:
    values = {"events": INBOX, "channel": "slack", "target": receiver.url, "internal": True} | fields
    return notifications.save_rule(
        NotificationRule(name=name, digest_seconds=digest_seconds, **values),
        actor=Principal(user=admin_operator),
        changed=[],
    )


def end_windows() -> None:
    """As if every window held now had started five minutes ago."""
    DigestEntry.objects.filter(delivery=None).update(created_at=F("created_at") - timedelta(minutes=5))


def approval(agent, n: int = 1) -> int:
    payload = {"toolId": "crm.update_customer", "arguments": {"customerId": f"C-{n}"}}
    title = f"{agent.agent_id} asks to call crm.update_customer"
    with transaction.atomic():  # as the apps open them: inside their own transaction
        return reviews.open_item(actor=SYSTEM, kind="tool_approval", title=title, agent=agent, payload=payload).pk


def lines_of(message: dict) -> list[str]:
    return message["blocks"][1]["text"]["text"].split("\n")


# One message per window ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_two_hundred_items_in_a_window_are_one_message_with_their_counts(
    receiver, other_receiver, admin_operator, settings
):
    """The inbox of the closing note (tests/support/volume.py): 200 items, 192 of them announced
    by the inbox (the 8 escalations announce themselves). A rule without a window sends 192
    messages; the rule with a window of 60 s sends one."""
    settings.NOTIFY_BASE_URL = "https://ops.example.com"
    rule(admin_operator, receiver, name="one a minute")
    rule(admin_operator, other_receiver, name="each at once", digest_seconds=0)
    agents = agents_of(manifest_text("agent.seo.vlevel"))

    items = mixed_inbox(agents)
    held = digests.send_due()  # the window is not over: nothing told yet
    end_windows()
    told = digests.send_due()
    send_pending()

    assert held == {"told": 0, "errors": 0}
    assert told == {"told": 1, "errors": 0}
    assert len(other_receiver.got) == 192
    (got,) = receiver.got
    message = got.json
    inbox = "https://ops.example.com/inbox/"
    assert message["text"] == f"192 new events from 12 agents <{inbox}>"
    head = message["blocks"][0]["text"]["text"]
    assert head == (
        f"*<{inbox}|192 new events from 12 agents>*\n"
        "100 approvals, 56 validation requests, 28 learning promotions, 8 questions"
    )
    announced = [item for item in items if item.kind != "escalation"]
    lines = lines_of(message)
    first = announced[0]
    assert lines[0] == f"• <https://ops.example.com/inbox/items/{first.pk}/|{first.title}> ({first.agent.agent_id})"
    linked = [line for line in lines if line.startswith("• ")]
    assert [f"/inbox/items/{item.pk}/|" in line for item, line in zip(announced, linked, strict=False)] == [True] * 5
    assert lines[-1] == "… and 187 more"
    delivery = Delivery.objects.get(rule__name="one a minute")
    assert (delivery.event, delivery.status, delivery.entries.count()) == ("digest", "sent", 192)
    assert DigestEntry.objects.filter(delivery=None).count() == 0  # every event told, none deleted


@pytest.mark.django_db
def test_a_window_ends_its_length_after_its_first_event_and_the_next_one_starts_after(receiver, admin_operator, vlevel):
    rule(admin_operator, receiver)
    approval(vlevel, 1)
    approval(vlevel, 2)
    end_windows()
    approval(vlevel, 3)  # in the same window: its first event is five minutes old

    assert digests.send_due() == {"told": 1, "errors": 0}
    assert digests.send_due() == {"told": 0, "errors": 0}  # a second run finds nothing: told once
    send_pending()
    approval(vlevel, 4)  # the next window
    approval(vlevel, 5)
    assert digests.send_due() == {"told": 0, "errors": 0}
    end_windows()
    assert digests.send_due() == {"told": 1, "errors": 0}
    send_pending()

    titles = [got.json["text"].split(" <")[0] for got in receiver.got]
    assert titles == ["3 new approvals from 1 agent", "2 new approvals from 1 agent"]
    # All from one agent: the inbox link shows that agent's items.
    assert receiver.got[0].json["text"].endswith("/inbox/?agent=agent.seo.vlevel>")


@pytest.mark.django_db
def test_a_window_that_held_one_event_tells_it_as_it_would_have_been_told_alone(receiver, admin_operator, vlevel):
    rule(admin_operator, receiver)
    item = approval(vlevel)
    end_windows()

    digests.send_due()
    (delivery,) = send_pending()

    (got,) = receiver.got
    assert delivery.event == "inbox.tool_approval"
    assert got.json["blocks"][0]["text"]["text"].startswith("*New inbox item: tool approval*\n<")
    assert f"/inbox/items/{item}/|" in got.json["text"] + got.json["blocks"][0]["text"]["text"]


@pytest.mark.django_db
def test_a_signed_digest_names_its_event_and_counts_by_kind(receiver, admin_operator, vlevel, architect):
    digest_rule = rule(admin_operator, receiver, channel="signed_webhook")
    receiver.secret = notifications.signing_secret(digest_rule)
    approval(vlevel)
    approval(architect)
    reviews.open_item(actor=SYSTEM, kind="learning_promotion", title="Promote", payload={"text": "Use absolute URLs"})
    end_windows()

    digests.send_due()
    send_pending()

    (got,) = receiver.got
    assert got.signature_ok is True
    assert got.headers["X-Governance-Event"] == "digest"
    body = got.json
    assert body["title"] == "3 new events from 2 agents"
    assert body["counts"] == {"inbox.tool_approval": 2, "inbox.promotion": 1}
    assert (body["total"], body["agents"]) == (3, 2)
    assert body["link"].endswith("/inbox/")  # several agents, and a promotion of none
    assert [item["event"] for item in body["items"]] == [
        "inbox.tool_approval",
        "inbox.tool_approval",
        "inbox.promotion",
    ]
    assert body["items"][0]["summary"] == 'crm.update_customer({"customerId": "C-1"})'


@pytest.mark.django_db
def test_an_email_digest_lists_the_first_items_with_their_pages(admin_operator, vlevel, settings, mailoutbox):
    settings.NOTIFY_BASE_URL = "https://ops.example.com"
    notifications.save_rule(
        NotificationRule(
            name="mail", events=INBOX, channel="email", target="ops@example.com", domain="seo", digest_seconds=300
        ),
        actor=Principal(user=admin_operator),
        changed=[],
    )
    ids = [approval(vlevel, n) for n in range(7)]
    end_windows()

    digests.send_due()
    send_pending()

    (message,) = mailoutbox
    assert message.subject == "[Digest] 7 new approvals from 1 agent"
    assert message.body.count("Open: https://ops.example.com/inbox/items/") == 5
    assert f"Open: https://ops.example.com/inbox/items/{ids[0]}/" in message.body
    assert "… and 2 more." in message.body
    assert "agent.seo.vlevel asks to call crm.update_customer (agent.seo.vlevel)\ncrm.update_customer(" in message.body
    assert "All of them: https://ops.example.com/inbox/?agent=agent.seo.vlevel&domain=seo" in message.body


# Urgent kinds ---------------------------------------------------------------------------------


def test_every_event_kind_is_told_in_words_and_only_escalations_skip_the_wait():
    assert set(TELLING) == set(EventKind.values)
    assert {event for event, telling in TELLING.items() if telling.urgent} == {EventKind.ESCALATION}


@pytest.mark.django_db
def test_an_escalation_goes_out_at_once_on_a_digest_rule_while_approvals_wait(
    receiver, admin_operator, vlevel, vlevel_api
):
    """A real escalation (vlevel's target agent is not loaded: the inbox gets it, with its deadline)."""
    rule(admin_operator, receiver, events=[*INBOX, EventKind.ESCALATION], digest_seconds=3600)
    approval(vlevel)
    job = vlevel_api.post("/jobs", envelope()).json()

    vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4))
    send_pending()

    (got,) = receiver.got
    assert got.json["text"].startswith("Escalation: Escalation of ")
    assert list(DigestEntry.objects.filter(delivery=None).values_list("event", flat=True)) == ["inbox.tool_approval"]


@pytest.mark.django_db
def test_an_escalation_past_its_deadline_is_told_again_at_once_with_its_inbox_page(
    receiver, admin_operator, vlevel, vlevel_api
):
    from agents import escalations
    from agents.models import Escalation

    rule(admin_operator, receiver, events=[EventKind.ESCALATION], digest_seconds=3600)
    job = vlevel_api.post("/jobs", envelope()).json()
    vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4))
    escalation = Escalation.objects.get()
    Escalation.objects.filter(pk=escalation.pk).update(deadline=F("deadline") - timedelta(days=2))

    assert escalations.process_overdue()["reescalated"] == 1
    send_pending()

    first, overdue = sorted(receiver.got, key=lambda got: "Past its deadline" in got.json["text"])
    assert first.json["text"].startswith("Escalation: Escalation of ")
    assert overdue.json["text"].startswith("Escalation: Past its deadline: escalation of ")
    assert f"/inbox/items/{escalation.review_item_id}/" in overdue.json["text"]
    assert not DigestEntry.objects.exists()


# Two runs at once -----------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_runs_at_once_never_tell_a_window_twice(receiver, admin_operator):
    agent = AgentFactory(agent_id="agent.seo.vlevel", domain="seo")
    rule(admin_operator, receiver)
    for n in range(20):
        approval(agent, n)
    end_windows()
    start = threading.Barrier(4)
    results: list[dict] = []

    def run() -> None:
        start.wait()
        try:
            results.append(digests.send_due())
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    send_pending()

    assert sum(r["told"] for r in results) == 1
    assert len(receiver.got) == 1
    assert receiver.got[0].json["text"].startswith("20 new approvals from 1 agent")
    (delivery,) = Delivery.objects.all()
    assert delivery.entries.count() == 20


@pytest.mark.django_db(transaction=True)
def test_a_run_skips_a_rule_another_run_is_telling_and_events_announced_meanwhile_are_not_held_up(
    receiver, admin_operator
):
    agent = AgentFactory(agent_id="agent.seo.vlevel", domain="seo")
    digest_rule = rule(admin_operator, receiver)
    approval(agent, 1)
    approval(agent, 2)
    end_windows()
    locked, release = threading.Event(), threading.Event()

    def other_run() -> None:
        """Holds the rule as a run telling its window does."""
        try:
            with transaction.atomic():
                NotificationRule.objects.select_for_update(no_key=True).get(pk=digest_rule.pk)
                locked.set()
                release.wait(timeout=30)
        finally:
            connection.close()

    holder = threading.Thread(target=other_run)
    holder.start()
    try:
        assert locked.wait(timeout=30)
        skipped = digests.send_due()
        approval(agent, 3)  # announced while the rule is held: not blocked
    finally:
        release.set()
        holder.join()
    told = digests.send_due()

    assert skipped == {"told": 0, "errors": 0}
    assert told == {"told": 1, "errors": 0}
    assert Delivery.objects.get().entries.count() == 3  # the window is told when it is, with all it held
    assert DigestEntry.objects.filter(delivery=None).count() == 0


# One rule's trouble is its own ----------------------------------------------------------------


@pytest.mark.django_db
def test_a_failing_receiver_or_an_unreadable_window_stops_no_other_rule(
    receiver, other_receiver, admin_operator, vlevel, settings, caplog
):
    settings.NOTIFY_MAX_ATTEMPTS = 2
    failing = rule(admin_operator, other_receiver, name="failing")
    other_receiver.statuses = [500]
    rule(admin_operator, receiver, name="working")
    broken = rule(admin_operator, receiver, name="broken")
    for n in range(3):
        approval(vlevel, n)
    DigestEntry.objects.filter(rule=broken).update(notice={"written by": "an older release"})
    end_windows()

    run = digests.send_due()
    send_pending()

    assert (run["told"], run["errors"]) == (2, 1)
    assert run["error_items"][0]["item"] == f"digest of rule {broken.pk}"
    assert "[notifications] digest of rule" in caplog.text
    statuses = dict(Delivery.objects.values_list("rule__name", "status"))
    assert statuses == {"failing": "gave_up", "working": "sent", "broken": "failed"}
    assert Delivery.objects.get(rule=broken).last_category == "invalid"
    assert len(other_receiver.got) == 2  # both attempts, then it gave up
    assert [got.json["text"].split(" <")[0] for got in receiver.got] == ["3 new approvals from 1 agent"]
    assert DigestEntry.objects.filter(delivery=None).count() == 0  # the broken window is not tried again
    assert digests.send_due() == {"told": 0, "errors": 0}
    assert Delivery.objects.filter(rule=failing).count() == 1


@pytest.mark.django_db
def test_a_rule_disabled_with_events_held_tells_none_of_them(receiver, admin_operator, vlevel):
    digest_rule = rule(admin_operator, receiver)
    approval(vlevel, 1)
    approval(vlevel, 2)
    digest_rule.enabled = False
    notifications.save_rule(digest_rule, actor=Principal(user=admin_operator), changed=["enabled"])
    end_windows()

    digests.send_due()
    (delivery,) = send_pending()

    assert (delivery.status, delivery.last_category) == ("failed", "rule_disabled")
    assert receiver.got == []


# Operators set the window ---------------------------------------------------------------------


@pytest.mark.django_db
def test_the_beat_entry_runs_every_ten_seconds():
    beat = PeriodicTask.objects.get(name="notification digests")
    assert (beat.task, beat.interval.every, beat.interval.period, beat.enabled) == (
        "notifications.send_digests",
        10,
        "seconds",
        True,
    )
