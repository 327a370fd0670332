"""Notifications: reviewers and operators are told by webhook (Slack-compatible or signed JSON)
and email; what they get is a title, a link to the item's page, short facts and one line of what is
to be decided, never an output or a secret; a delivery is retried with a doubling wait, and a 4xx
other than 429 is not.

The receiver is a real HTTP server on 127.0.0.1, reached by rules marked internal (the outbound
guard refuses loopback to any other); rules that are only saved point at a public IP literal, so
no test needs DNS."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta

import pytest
from django.core import mail
from django.db import transaction
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from agents import approvals, escalations, kpi_alerts, tools
from gateway import pins
from governance.contracts import services as contracts
from governance.contracts.catalog import parse
from governance.kernel.exceptions import Forbidden
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM, Principal
from governance.notifications import messages
from governance.notifications import services as notifications
from governance.notifications.models import ComplianceWatch, Delivery, EventKind, NotificationRule
from governance.reviews import kinds as review_kinds
from governance.reviews import services as reviews
from memory import lifecycle
from sessions import effects
from tests.agents.test_job_lifecycle import result
from tests.agents.test_jobs import envelope
from tests.agents.test_kpi_alerts import BAD, run
from tests.factories.agents import AgentFactory
from tests.support.processes import celery_worker, free_port, wait_for

CANARY = "CANARY-7f3a-model-said-this"
PUBLIC = "https://93.184.216.34"  # a public address, as an IP literal: saved without DNS, never sent to


def make_rule(admin_operator, **fields) -> NotificationRule:
    values = {"name": "reviewers", "events": [EventKind.INBOX_VALIDATION], "channel": "signed_webhook"} | fields
    return notifications.save_rule(NotificationRule(**values), actor=Principal(user=admin_operator), changed=[])


def send_pending() -> list[Delivery]:
    """Attempt every pending delivery until none is due (retries made due at once)."""
    while Delivery.objects.filter(status="pending").exists():
        Delivery.objects.filter(status="pending").update(next_attempt_at=timezone.now())
        for pk in Delivery.objects.filter(status="pending").values_list("pk", flat=True):
            notifications.attempt(pk)
    return list(Delivery.objects.order_by("pk"))


def open_item(kind: str, agent, title: str = "Approve the cart change?") -> int:
    return reviews.open_item(
        actor=SYSTEM, kind=kind, title=title, agent=agent, payload={"lastAiMessage": CANARY, "output": CANARY}
    ).pk


def events() -> list[str]:
    return list(Delivery.objects.order_by("pk").values_list("event", flat=True))


# What is sent ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_signed_webhook_verifies_and_links_to_the_item_without_the_output(receiver, admin_operator, vlevel, settings):
    settings.NOTIFY_BASE_URL = "https://ops.example.com"
    rule = make_rule(
        admin_operator, target=receiver.url, internal=True, events=[EventKind.INBOX_VALIDATION, EventKind.ESCALATION]
    )
    receiver.secret = notifications.signing_secret(rule)

    item = open_item("session_validation", vlevel)
    (delivery,) = send_pending()

    (got,) = receiver.got
    assert got.signature_ok is True
    assert got.path == "/hook"
    assert got.headers["X-Governance-Event"] == "inbox.validation"
    assert got.headers["webhook-id"] == f"delivery_{delivery.pk}"
    assert got.json == {
        "event": "inbox.validation",
        "title": "Approve the cart change?",
        "link": f"https://ops.example.com/inbox/items/{item}/",
        "facts": {"agent": "agent.seo.vlevel", "item": str(item)},
        "summary": "",
        "at": got.json["at"],
    }
    assert CANARY.encode() not in got.body
    assert (delivery.status, delivery.attempts, delivery.payload) == ("sent", 1, got.json)


@pytest.mark.django_db
def test_a_receiver_with_another_secret_rejects_the_signature(receiver, admin_operator, vlevel):
    rule = make_rule(admin_operator, target=receiver.url, internal=True)
    receiver.secret = notifications.signing_secret(rule)
    notifications.rotate_secret(rule, actor=Principal(user=admin_operator))  # the receiver was not told

    open_item("session_validation", vlevel)
    send_pending()

    assert [got.signature_ok for got in receiver.got] == [False]
    assert AuditEvent.objects.filter(action="notification_rule.secret_rotated", actor="user:alice").exists()


@pytest.mark.django_db
def test_an_escalation_names_the_job_and_its_triggers_never_the_output(receiver, admin_operator, vlevel_api):
    """A real escalation (vlevel's target agent is not loaded: the inbox gets it) whose output
    carries the canary; the inbox item holds the output, the notification does not."""
    rule = make_rule(admin_operator, target=receiver.url, internal=True, events=[EventKind.ESCALATION])
    receiver.secret = notifications.signing_secret(rule)
    job = vlevel_api.post("/jobs", envelope()).json()
    scores = [{"url": CANARY, "level": "V2"}]
    vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4, data={"scores": scores}))

    send_pending()

    (got,) = receiver.got
    assert got.signature_ok is True
    assert got.json["event"] == "escalation"
    assert got.json["link"].endswith(f"/agents/jobs/{job['jobId']}/")
    assert got.json["facts"]["triggers"] == "confidence < 0.7"
    assert got.json["facts"]["routed to"] == "the reviewer inbox"
    assert CANARY.encode() not in got.body
    assert CANARY in json.dumps(reviews.ReviewItem.objects.get(kind="escalation").payload)  # it was there to leak


def open_tool_approval(agent, arguments: dict, title: str = "agent.seo.vlevel asks to call crm.update_customer") -> int:
    payload = {"toolId": "crm.update_customer", "arguments": arguments}
    return reviews.open_item(actor=SYSTEM, kind="tool_approval", title=title, agent=agent, payload=payload).pk


@pytest.mark.django_db
def test_a_tool_approval_says_who_asks_to_call_what_with_which_arguments_and_links_to_its_page(
    receiver, admin_operator, vlevel, reviewer, client, settings
):
    settings.NOTIFY_BASE_URL = "https://ops.example.com"
    make_rule(
        admin_operator, target=receiver.url, internal=True, channel="slack", events=[EventKind.INBOX_TOOL_APPROVAL]
    )

    item = open_tool_approval(vlevel, {"customerId": "C-10001", "note": "x" * 400})
    send_pending()

    (got,) = receiver.got
    head, link, summary = got.json["blocks"][0]["text"]["text"].split("\n")
    assert head == "*New inbox item: tool approval*"
    assert link == f"<https://ops.example.com/inbox/items/{item}/|agent.seo.vlevel asks to call crm.update_customer>"
    assert summary.startswith('crm.update_customer({"customerId": "C-10001", "note": "xxx')
    assert (len(summary), summary[-1]) == (160, "…")  # one line, cut
    assert {"type": "mrkdwn", "text": "*agent*\nagent.seo.vlevel"} in got.json["blocks"][1]["fields"]
    client.force_login(reviewer)
    assert client.get(f"/inbox/items/{item}/").status_code == 200  # the link opens the item


@pytest.mark.django_db
def test_what_looks_like_a_credential_in_the_arguments_or_the_title_never_reaches_the_channel(
    receiver, admin_operator, vlevel
):
    make_rule(admin_operator, target=receiver.url, internal=True, events=[EventKind.INBOX_TOOL_APPROVAL])
    token = "ghp_R8kq2VxW7mLpZ4tN9bYc3HdJ6sFa1GeU0oIi"
    arguments = {"api_key": "sk_live_51Hh2Lq", "url": "https://bob:hunter2@crm.example.com/x", "note": f"use {token}"}

    open_tool_approval(vlevel, arguments, title=f"agent.seo.vlevel asks to call crm.update_customer with {token}")
    (delivery,) = send_pending()

    sent = receiver.got[0].body.decode()
    for secret in ("sk_live_51Hh2Lq", "hunter2", "R8kq2VxW7mLpZ4tN9bYc3HdJ6sFa1GeU0oIi"):
        assert secret not in sent
    assert receiver.got[0].json["summary"] == (
        'crm.update_customer({"api_key": "[redacted]", "note": "use [redacted]", '
        '"url": "https://[redacted]@crm.example.com/x"})'
    )
    assert receiver.got[0].json["title"].endswith("with [redacted]")
    assert delivery.status == "sent"


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("password=hunter2 next", "password=[redacted] next"),
        ('{"Authorization": "Bearer abc def"}', '{"Authorization": "[redacted]"}'),
        ("to https://bob:hunter2@crm.example.com/x", "to https://[redacted]@crm.example.com/x"),
        ("client_secret: s3cr3t", "client_secret: [redacted]"),
        ("AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AKIAIOSFODNN7EXAMPLE [redacted]"),
    ],
)
def test_credentials_are_masked_before_a_line_is_cut(text, told):
    assert messages.without_secrets(text) == told


@pytest.mark.parametrize(
    "text",
    [
        'crm.update_customer({"customerId": "C-10001", "fields": {"status": "churn-risk"}})',
        "Refund order O-17 (19.90 EUR); run /srv/exports/Quarterly_Report_2024.csv",
        "argumentsHash e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "job 2f1e6b0c-8a4d-4c2e-9b7a-0d3c5e6f7a8b of agent.seo.vlevel",
    ],
)
def test_what_a_reviewer_decides_on_is_not_masked(text):
    assert messages.without_secrets(text) == text


@pytest.mark.django_db
def test_slack_gets_text_and_blocks_and_a_title_cannot_become_a_link(receiver, admin_operator, vlevel):
    make_rule(
        admin_operator, target=receiver.url, internal=True, channel="slack", events=[EventKind.INBOX_TOOL_APPROVAL]
    )

    approvals.request_approval(actor=Principal(agent=vlevel), title="<https://evil.test|click> " + "x" * 300)
    send_pending()

    (got,) = receiver.got
    assert "webhook-signature" not in got.headers
    body = got.json
    assert set(body) == {"text", "blocks"}
    assert body["text"].startswith("New inbox item: tool approval: agent.seo.vlevel: &lt;https://evil.test|click&gt;")
    assert "<https://evil.test" not in got.body.decode()
    assert [block["type"] for block in body["blocks"]] == ["section", "section", "context"]
    title = re.search(r"\|(.*)>$", body["blocks"][0]["text"]["text"]).group(1)
    assert title.endswith("…")
    assert len(title) < 160  # cut to 120 characters before escaping


@pytest.mark.django_db
def test_email_goes_through_the_django_backend_with_the_link(admin_operator, vlevel, settings):
    settings.NOTIFY_BASE_URL = "https://ops.example.com"
    make_rule(admin_operator, channel="email", target="ops@example.com, rita@example.com")

    item = open_item("session_validation", vlevel)
    (delivery,) = send_pending()

    (message,) = mail.outbox
    assert message.to == ["ops@example.com", "rita@example.com"]
    assert message.subject == "[New inbox item: validation request] Approve the cart change?"
    assert f"Open: https://ops.example.com/inbox/items/{item}/" in message.body
    assert CANARY not in message.body
    assert delivery.status == "sent"


# Retries --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_500_is_retried_and_the_delivery_is_sent_on_the_second_attempt(receiver, admin_operator, vlevel, settings):
    settings.NOTIFY_RETRY_SECONDS = 30
    receiver.statuses = [500, 200]
    make_rule(admin_operator, target=receiver.url, internal=True)
    open_item("session_validation", vlevel)
    (delivery,) = Delivery.objects.all()

    first = notifications.attempt(delivery.pk)

    delivery.refresh_from_db()
    assert (first.status, first.retry_in, delivery.attempts) == ("pending", 30, 1)
    assert (delivery.last_status, delivery.last_category) == (500, "http_error")  # not the receiver's answer
    assert notifications.attempt(delivery.pk).status == "busy"  # not due yet: no second send
    ((delivery),) = send_pending()
    assert (delivery.status, delivery.attempts, delivery.last_status, delivery.last_category) == ("sent", 2, None, "")
    assert len(receiver.got) == 2


@pytest.mark.django_db
def test_a_400_fails_at_once_without_a_retry(receiver, admin_operator, vlevel):
    receiver.statuses = [400]
    make_rule(admin_operator, target=receiver.url, internal=True)
    open_item("session_validation", vlevel)

    (delivery,) = send_pending()

    assert (delivery.status, delivery.attempts) == ("failed", 1)
    assert delivery.finished_at is not None
    assert len(receiver.got) == 1


@pytest.mark.django_db
def test_a_429_is_retried_and_the_delivery_gives_up_after_the_last_attempt(receiver, admin_operator, vlevel, settings):
    settings.NOTIFY_MAX_ATTEMPTS = 3
    receiver.statuses = [429, 503]
    make_rule(admin_operator, target=receiver.url, internal=True)
    open_item("session_validation", vlevel)

    (delivery,) = send_pending()

    assert (delivery.status, delivery.attempts) == ("gave_up", 3)
    assert (delivery.last_status, delivery.last_category) == (503, "http_error")
    assert len(receiver.got) == 3


@pytest.mark.django_db
def test_disabling_a_rule_stops_its_pending_retries(receiver, admin_operator, vlevel):
    receiver.statuses = [503]
    rule = make_rule(admin_operator, target=receiver.url, internal=True)
    open_item("session_validation", vlevel)
    (delivery,) = Delivery.objects.all()
    notifications.attempt(delivery.pk)

    rule.enabled = False
    notifications.save_rule(rule, actor=Principal(user=admin_operator), changed=["enabled"])
    (delivery,) = send_pending()

    assert (delivery.status, delivery.attempts, delivery.last_category) == ("failed", 1, "rule_disabled")
    assert len(receiver.got) == 1


@pytest.mark.django_db
def test_an_unreachable_receiver_is_retried_with_a_doubling_wait(admin_operator, vlevel, settings):
    settings.NOTIFY_RETRY_SECONDS = 10
    make_rule(admin_operator, target=f"http://127.0.0.1:{free_port()}/hook", internal=True)
    open_item("session_validation", vlevel)
    (delivery,) = Delivery.objects.all()

    waits = []
    for _ in range(3):
        Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        waits.append(notifications.attempt(delivery.pk).retry_in)

    delivery.refresh_from_db()
    assert waits == [10, 20, 40]
    assert (delivery.last_status, delivery.last_category) == (None, "connection")


@pytest.mark.django_db
def test_the_backstop_queues_again_only_deliveries_overdue_by_a_minute(admin_operator, vlevel):
    """A delivery whose task was lost (broker down at commit) is found again by the beat task;
    one just queued, or waiting for its retry, is left to its own task."""
    make_rule(admin_operator, target=f"{PUBLIC}/x")
    for _ in range(3):
        open_item("session_validation", vlevel)
    lost, _just_queued, retrying = Delivery.objects.order_by("pk")
    Delivery.objects.filter(pk=lost.pk).update(next_attempt_at=timezone.now() - timedelta(minutes=5))
    Delivery.objects.filter(pk=retrying.pk).update(next_attempt_at=timezone.now() + timedelta(minutes=5))

    assert notifications.resend_due() == {"queued": 1}
    beat = PeriodicTask.objects.get(name="notifications resend")
    assert (beat.task, beat.interval.every, beat.enabled) == ("notifications.resend_due", 300, True)


# Which events fire, for whom ------------------------------------------------------------------


@pytest.mark.django_db
def test_each_inbox_kind_fires_its_own_event(admin_operator, vlevel):
    make_rule(admin_operator, target=f"{PUBLIC}/x", events=list(EventKind.values), threshold_percent=50)

    for kind in ["session_validation", "session_communication", "tool_approval", "agent.approval"]:
        open_item(kind, vlevel)
    open_item("learning_promotion", None, title="Promote learning 12 to domain")

    assert events() == [
        "inbox.validation",
        "inbox.communication",
        "inbox.tool_approval",
        "inbox.tool_approval",
        "inbox.promotion",
    ]


def test_every_inbox_kind_the_code_opens_is_announced_or_announces_itself():
    """A new inbox kind must join the announced ones (or announce itself): reviewers are told."""
    opened = {
        approvals.REVIEW_KIND,
        tools.REVIEW_KIND,
        lifecycle.REVIEW_KIND,
        *effects.REVIEW_KINDS.values(),
        escalations.REVIEW_KIND,
        kpi_alerts.REVIEW_KIND,
        pins.REVIEW_KIND,
    }
    announced = {kind.code for kind in review_kinds.all() if kind.announces_as is not None}
    assert opened == announced | {escalations.REVIEW_KIND, kpi_alerts.REVIEW_KIND}


@pytest.mark.django_db
def test_a_critical_kpi_is_told_once_until_it_recovers(admin_operator, vlevel):
    make_rule(admin_operator, target=f"{PUBLIC}/x", events=list(EventKind.values), threshold_percent=50)

    run(vlevel, BAD, n=3)

    assert events() == ["kpi.critical"]  # its inbox item is not told a second time
    payload = Delivery.objects.get().payload
    assert payload["title"] == "KPI task_success_rate of agent.seo.vlevel is critical"
    assert payload["link"].endswith("/agents/agent.seo.vlevel/")
    assert payload["facts"] == {"metric": "task_success_rate", "mean": "0 percentage", "critical at": "0.7"}


@pytest.mark.django_db
def test_an_escalation_routed_to_another_agent_is_told_too(admin_operator, vlevel_api, architect):
    make_rule(admin_operator, target=f"{PUBLIC}/x", events=list(EventKind.values), threshold_percent=50)
    job = vlevel_api.post("/jobs", envelope()).json()

    vlevel_api.post(f"/jobs/{job['jobId']}/result", result(confidence=0.4))

    assert events() == ["escalation"]
    assert Delivery.objects.get().payload["facts"]["routed to"] == "agent.seo.architect"


@pytest.fixture
def answer_contract():
    doc = next(d for d in parse(contracts.CATALOG.read_text(encoding="utf-8")) if d.name == "retrieval_answer")
    return contracts.save_contract(doc, actor=SYSTEM)[0]


def audit(contract, *outputs, agent=None) -> None:
    contracts.check([contracts.Submission(contract, output, agent=agent) for output in outputs], principal=SYSTEM)


@pytest.mark.django_db
def test_contract_compliance_is_told_once_when_it_drops_below_and_again_after_it_recovered(
    admin_operator, answer_contract, vlevel
):
    rule = make_rule(
        admin_operator,
        target=f"{PUBLIC}/x",
        events=[EventKind.CONTRACT_COMPLIANCE],
        threshold_percent=75,
        window_checks=4,
    )
    good, bad = {"status": "ok", "answer": "fine", "sources": []}, {"status": "maybe"}
    assert contracts.validator(answer_contract.pk)(good, None).compliant

    audit(answer_contract, good, good, bad)  # 3 checks: not measured yet
    audit(answer_contract, good)  # 3/4 = 75 %: not below
    assert events() == []
    audit(answer_contract, bad)  # 2/4
    audit(answer_contract, bad)  # 1/4: still below, told once
    assert events() == ["contract.compliance_below"]
    payload = Delivery.objects.get().payload
    assert payload["title"] == "Contract retrieval_answer compliance 50% is below 75%"
    assert payload["link"].endswith("/contracts/retrieval_answer/")
    assert payload["facts"]["over"] == "the latest 4 checks"
    assert "maybe" not in json.dumps(payload)

    audit(answer_contract, good, good, good, good)  # recovered: re-armed
    assert ComplianceWatch.objects.get(rule=rule).below is False
    audit(answer_contract, bad, bad)  # 2/4 again
    assert events() == ["contract.compliance_below", "contract.compliance_below"]


@pytest.mark.django_db
def test_a_compliance_rule_of_one_agent_measures_only_that_agents_checks(admin_operator, answer_contract, vlevel):
    make_rule(
        admin_operator,
        target=f"{PUBLIC}/x",
        events=[EventKind.CONTRACT_COMPLIANCE],
        agent=vlevel,
        threshold_percent=90,
        window_checks=2,
    )
    other = AgentFactory(agent_id="agent.rag.indexer", domain="rag")

    audit(answer_contract, {"status": "maybe"}, {"status": "maybe"}, agent=other)
    assert events() == []
    audit(answer_contract, {"status": "maybe"}, {"status": "maybe"}, agent=vlevel)
    assert events() == ["contract.compliance_below"]


@pytest.mark.django_db
def test_rules_are_scoped_by_agent_and_by_domain(admin_operator, vlevel):
    indexer = AgentFactory(agent_id="agent.rag.indexer", domain="rag")
    hook = f"{PUBLIC}/x"
    make_rule(admin_operator, name="everyone", target=hook)
    make_rule(admin_operator, name="vlevel only", target=hook, agent=vlevel)
    make_rule(admin_operator, name="indexer only", target=hook, agent=indexer)
    make_rule(admin_operator, name="seo", target=hook, domain="seo")
    make_rule(admin_operator, name="rag", target=hook, domain="rag")
    make_rule(admin_operator, name="disabled", target=hook, enabled=False)
    make_rule(admin_operator, name="other event", target=hook, events=[EventKind.ESCALATION])

    open_item("session_validation", vlevel)
    told = set(Delivery.objects.values_list("rule__name", flat=True))
    assert told == {"everyone", "vlevel only", "seo"}

    Delivery.objects.all().delete()
    open_item("session_validation", indexer)
    assert set(Delivery.objects.values_list("rule__name", flat=True)) == {"everyone", "indexer only", "rag"}


@pytest.mark.django_db
def test_a_rolled_back_event_leaves_no_delivery(admin_operator, vlevel):
    make_rule(admin_operator, target=f"{PUBLIC}/x")

    def failing_write() -> None:
        with transaction.atomic():
            open_item("session_validation", vlevel)
            raise RuntimeError("the caller's write failed")

    with pytest.raises(RuntimeError):
        failing_write()

    assert Delivery.objects.count() == 0


# Rules: operators only ------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_service_refuses_agents_and_viewers(vlevel, viewer):
    rule = NotificationRule(name="x", events=["escalation"], channel="slack", target=f"{PUBLIC}/x")
    for actor in (Principal(agent=vlevel), Principal(user=viewer), SYSTEM):
        with pytest.raises(Forbidden):
            notifications.save_rule(rule, actor=actor, changed=[])
    assert NotificationRule.objects.count() == 0


def login(client, user) -> None:
    """Into the admin, as a person of that role (the admin takes staff accounts)."""
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    client.force_login(user)


def _form(**changes) -> dict:
    return {
        "name": "ops",
        "enabled": "on",
        "events": ["inbox.validation", "escalation"],
        "agent": "",
        "domain": "",
        "channel": "signed_webhook",
        "target": f"{PUBLIC}/governance",
        "digest_seconds": "0",
        "threshold_percent": "",
        "window_checks": "20",
    } | changes


@pytest.mark.django_db
def test_an_admin_adds_a_rule_and_sees_its_signing_secret(client, admin_operator):
    login(client, admin_operator)

    response = client.post("/admin/governance/notificationrule/add/", _form(), follow=True)

    assert response.status_code == 200
    rule = NotificationRule.objects.get(name="ops")
    assert rule.events == ["inbox.validation", "escalation"]
    assert rule.created_by == "user:alice"
    assert AuditEvent.objects.filter(action="notification_rule.added", actor="user:alice").exists()
    page = client.get(f"/admin/governance/notificationrule/{rule.pk}/change/").content.decode()
    assert notifications.signing_secret(rule) in page
    assert notifications.signing_secret(rule).startswith("whsec_")
    assert "webhook-signature" in page


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"target": "ftp://93.184.216.34/x"}, "the ftp scheme is never allowed; use https"),
        ({"target": "https://user:pw@93.184.216.34/x"}, "credentials in the URL are not allowed"),
        ({"target": "file:///etc/passwd"}, "the file scheme is never allowed"),
        ({"target": "https:///nohost"}, "the URL has no host name"),
        ({"target": "https://127.0.0.1/x"}, "127.0.0.1 is a loopback address: refused"),
        ({"target": "https://no-such-host.invalid/x"}, "The host name does not resolve"),
        ({"channel": "email", "target": "ops@example.com, not-an-address"}, "Not an email address: not-an-address."),
        ({"events": ["contract.compliance_below"]}, "A compliance rule needs a threshold between 1 and 100"),
        ({"digest_seconds": "86401"}, "Ensure this value is less than or equal to 86400."),
        ({"digest_seconds": "-1"}, "Ensure this value is greater than or equal to 0."),
    ],
)
@pytest.mark.django_db
def test_the_admin_shows_why_a_rule_is_refused(client, admin_operator, changes, message):
    login(client, admin_operator)

    response = client.post("/admin/governance/notificationrule/add/", _form(**changes))

    assert response.status_code == 200
    assert message in response.content.decode()
    assert NotificationRule.objects.count() == 0


@pytest.mark.django_db
def test_a_viewer_reads_rules_without_the_secret_or_the_whole_url_and_cannot_change_them(
    client, admin_operator, viewer
):
    rule = make_rule(admin_operator, target=f"{PUBLIC}/services/T000/B000/tokentoken")
    login(client, viewer)

    listing = client.get("/admin/governance/notificationrule/").content.decode()
    page = client.get(f"/admin/governance/notificationrule/{rule.pk}/change/").content.decode()
    refused = client.post(f"/admin/governance/notificationrule/{rule.pk}/change/", _form(target="https://evil.test/"))
    added = client.post("/admin/governance/notificationrule/add/", _form(name="viewer's"))
    deleted = client.post(f"/admin/governance/notificationrule/{rule.pk}/delete/", {"post": "yes"})

    assert "reviewers" in listing
    for html in (listing, page):
        assert "tokentoken" not in html
        assert notifications.signing_secret(rule) not in html
    assert f"{PUBLIC}/…" in page
    assert (refused.status_code, added.status_code, deleted.status_code) == (403, 403, 403)
    rule.refresh_from_db()
    assert rule.target.endswith("tokentoken")
    assert NotificationRule.objects.count() == 1


@pytest.mark.django_db
def test_an_admin_disables_a_rule_and_nobody_deletes_one(client, admin_operator):
    rule = make_rule(admin_operator, target=f"{PUBLIC}/x")
    login(client, admin_operator)

    client.post("/admin/governance/notificationrule/", {"action": "disable", "_selected_action": [rule.pk]})
    deleted = client.post(f"/admin/governance/notificationrule/{rule.pk}/delete/", {"post": "yes"})

    rule.refresh_from_db()
    assert rule.enabled is False
    assert deleted.status_code == 403
    assert AuditEvent.objects.filter(action="notification_rule.changed", data__fields=["enabled"]).exists()


@pytest.mark.django_db
def test_deliveries_are_read_only_in_the_admin_with_their_status(client, admin_operator, viewer, vlevel):
    make_rule(admin_operator, target=f"{PUBLIC}/secret-path")
    open_item("session_validation", vlevel)
    delivery = Delivery.objects.get()

    for user in (admin_operator, viewer):
        login(client, user)
        listing = client.get("/admin/governance/delivery/").content.decode()
        page = client.get(f"/admin/governance/delivery/{delivery.pk}/change/").content.decode()
        assert "Pending" in listing
        assert "secret-path" not in page
        assert client.post(f"/admin/governance/delivery/{delivery.pk}/change/", {}).status_code == 403
        assert client.get("/admin/governance/delivery/add/").status_code == 403


# Hostile callers ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_agent_key_reaches_no_rule_anywhere(client, vlevel_api, admin_operator):
    rule = make_rule(admin_operator, target=f"{PUBLIC}/x")
    headers = {"HTTP_AUTHORIZATION": f"Bearer {vlevel_api.key}"}

    schema = client.get("/api/v1/openapi.json").content.decode()
    admin_page = client.get(f"/admin/governance/notificationrule/{rule.pk}/change/", **headers)
    api_guess = client.post("/api/v1/notifications/rules", {"target": "https://evil.test"}, **headers)

    assert "notif" not in schema.lower()
    assert admin_page.status_code == 302  # to the login page: a key is not a browser session
    assert api_guess.status_code == 404
    assert NotificationRule.objects.count() == 1


@pytest.mark.django_db
def test_what_an_agent_writes_never_chooses_where_the_server_connects(receiver, admin_operator, vlevel):
    """An agent's approval request full of addresses: the one request goes to the operator's
    receiver, and the addresses reach it only as escaped text, cut to size."""
    make_rule(admin_operator, target=receiver.url, internal=True, events=[EventKind.INBOX_TOOL_APPROVAL])
    elsewhere = f"http://127.0.0.1:{free_port()}/steal"

    approvals.request_approval(
        actor=Principal(agent=vlevel), title=elsewhere, details=elsewhere, payload={"webhook": elsewhere}
    )
    (delivery,) = send_pending()

    assert delivery.target == receiver.url
    assert [got.path for got in receiver.got] == ["/hook"]
    assert elsewhere not in json.dumps(receiver.got[0].json["facts"])


# A real worker --------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_delivers_after_commit_and_retries_a_500(receiver, admin_operator, tmp_path, settings):
    agent = AgentFactory(agent_id="agent.seo.vlevel", domain="seo")
    rule = make_rule(admin_operator, target=receiver.url, internal=True)
    receiver.secret = notifications.signing_secret(rule)
    receiver.statuses = [500, 200]

    with celery_worker(tmp_path, wait_ready=True, SECRET_KEY=settings.SECRET_KEY, NOTIFY_RETRY_SECONDS="1") as log:
        with transaction.atomic():
            open_item("session_validation", agent)
            time.sleep(0.5)
            assert receiver.got == []  # nothing leaves before the commit
        delivered = wait_for(lambda: Delivery.objects.filter(status="sent").first(), timeout=60)
        assert delivered, log.read_text()[-3000:]

    assert delivered.attempts == 2
    assert [got.signature_ok for got in receiver.got] == [True, True]
    assert CANARY.encode() not in receiver.got[1].body
