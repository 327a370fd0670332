"""Job triggers (seed 001 "MiniLo DECLENCHE"): cron slots, signed webhooks and platform events
create jobs through the same submission service as the API, with context.source saying which."""

from __future__ import annotations

import base64
import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, PeriodicTask
from standardwebhooks import Webhook

from agents import triggers
from agents.manifest import read_text
from agents.models import Agent, Job, JobTrigger
from agents.registry import load_manifest
from governance.kernel import webhooks
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from tests.factories.governance import UserFactory
from tests.support.jobs import finish_job, submit_job
from tests.support.keys import issue_key
from tests.support.manifests import load, manifest_text

URLS = {"urls": ["https://shop.test/a"]}
GOOD = {
    "success": True,
    "data": {"scores": [{"url": "https://shop.test/a", "level": "V2"}], "recommendations": []},
    "confidence": 0.9,
}


def add_trigger(agent: Agent, kind: str, **fields) -> JobTrigger:
    defaults = {"intent": "seo_audit", "entity_type": "page", "payload": URLS, "priority": "high"}
    trigger = JobTrigger(name=f"{kind}-{agent.pk}-{JobTrigger.objects.count()}", agent=agent, kind=kind)
    for field, value in {**defaults, **fields}.items():
        setattr(trigger, field, value)
    return triggers.save_trigger(trigger, actor=SYSTEM, changed=[])


def every_minute() -> CrontabSchedule:
    return CrontabSchedule.objects.create(minute="*", hour="*", day_of_month="*", month_of_year="*", day_of_week="*")


# Cron ---------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_beat_runs_the_cron_triggers_every_minute():
    assert PeriodicTask.objects.get(name="job triggers").task == "agents.fire_due_triggers"


@pytest.mark.django_db
def test_a_cron_slot_creates_one_job_with_source_cron_then_waits_for_the_next_slot(vlevel):
    trigger = add_trigger(vlevel, "cron", crontab=every_minute())
    slot = trigger.next_run_at
    assert slot > timezone.now() - timedelta(seconds=1)

    assert triggers.fire_due(now=slot) == {"fired": 1, "replayed": 0, "refused": 0, "errors": 0}
    assert triggers.fire_due(now=slot) == {"fired": 0, "replayed": 0, "refused": 0, "errors": 0}

    job = Job.objects.get(agent=vlevel)
    assert (job.context["source"], job.priority, job.payload) == ("cron", "high", URLS)
    assert job.idempotency_key == f"trigger:{trigger.name}:{slot.isoformat()}"
    trigger.refresh_from_db()
    assert trigger.next_run_at == slot + timedelta(minutes=1)
    assert (trigger.fired_count, trigger.last_fired_at is not None) == (1, True)


@pytest.mark.django_db(transaction=True)
def test_two_beats_firing_at_once_create_one_job_per_slot():
    vlevel = load("agent.seo.vlevel")
    trigger = add_trigger(vlevel, "cron", crontab=every_minute())
    start = threading.Barrier(2)
    results: list[dict] = []

    def beat() -> None:
        start.wait()
        try:
            results.append(triggers.fire_due(now=trigger.next_run_at))
        finally:
            connection.close()

    threads = [threading.Thread(target=beat) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sum(r["fired"] + r["replayed"] for r in results) == 1
    assert Job.objects.filter(agent=vlevel).count() == 1


@pytest.mark.django_db
def test_a_trigger_whose_schedule_cannot_be_read_is_reported_and_switched_off_and_the_rest_fire(vlevel):
    """A crontab edited by hand into nonsense (beat's table has no check of its own) used to end
    the whole run at that trigger, at every beat: no later trigger of any agent fired."""
    broken = add_trigger(vlevel, "cron", crontab=every_minute())
    healthy = add_trigger(vlevel, "cron", crontab=every_minute())
    CrontabSchedule.objects.filter(pk=broken.crontab_id).update(minute="banana")
    JobTrigger.objects.filter(pk=broken.pk).update(next_run_at=healthy.next_run_at - timedelta(seconds=1))

    counts = triggers.fire_due(now=healthy.next_run_at)

    assert (counts["fired"], counts["errors"]) == (1, 1)
    assert counts["error_items"][0]["item"] == f"trigger {broken.pk}"
    assert list(Job.objects.values_list("idempotency_key", flat=True)) == [
        f"trigger:{healthy.name}:{healthy.next_run_at.isoformat()}"
    ]
    broken.refresh_from_db()
    assert not broken.enabled
    assert AuditEvent.objects.get(action="trigger.disabled").data["reason"].startswith("ValueError")
    assert triggers.fire_due(now=healthy.next_run_at)["errors"] == 0  # not tried again at every beat


@pytest.mark.django_db
def test_a_slot_the_manifest_refuses_is_recorded_and_the_trigger_moves_on(vlevel):
    trigger = add_trigger(vlevel, "cron", crontab=every_minute())
    JobTrigger.objects.filter(pk=trigger.pk).update(payload={})  # an operator's later mistake
    slot = trigger.next_run_at

    assert triggers.fire_due(now=slot)["refused"] == 1

    assert not Job.objects.exists()
    refusal = AuditEvent.objects.get(action="trigger.refused")
    assert refusal.data["errors"][0]["loc"] == ["body", "payload", "urls"]
    trigger.refresh_from_db()
    assert trigger.next_run_at > slot


@pytest.mark.django_db
def test_a_trigger_is_checked_when_it_is_saved(vlevel):
    with pytest.raises(ValidationError) as cron:
        add_trigger(vlevel, "cron")
    with pytest.raises(ValidationError) as constraints:
        add_trigger(vlevel, "webhook", constraints={"maxTokens": -1})
    with pytest.raises(ValidationError) as event:
        add_trigger(vlevel, "event", event="job.finished", event_filter={"colour": "red"})

    assert "crontab" in cron.value.message_dict
    assert "constraints" in constraints.value.message_dict
    assert "event_filter" in event.value.message_dict
    assert not JobTrigger.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("roles", [["Viewer"], ["Reviewer"]])
def test_only_operators_with_the_permission_manage_triggers(vlevel, roles):
    from governance.kernel.exceptions import Forbidden
    from governance.kernel.principals import Principal

    trigger = JobTrigger(name="nope", agent=vlevel, kind="webhook", intent="seo_audit", entity_type="page")
    with pytest.raises(Forbidden):
        triggers.save_trigger(trigger, actor=Principal(user=UserFactory(roles=roles)), changed=[])
    with pytest.raises(Forbidden):
        triggers.save_trigger(trigger, actor=Principal(agent=vlevel), changed=[])

    assert not JobTrigger.objects.exists()


# Webhooks -----------------------------------------------------------------------------------------


def deliver(
    client,
    trigger: JobTrigger,
    body: bytes,
    *,
    secret: str | None = None,
    age: int = 0,
    message_id: str = "msg_1",
    **headers,
):
    """A delivery signed by the official Standard Webhooks library, as a trigger's sender signs."""
    sent_at = datetime.now(tz=UTC) - timedelta(seconds=age)
    signature = Webhook(secret or triggers.webhook_secret(trigger)).sign(message_id, sent_at, body.decode())
    signed = {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(sent_at.timestamp())),
        "webhook-signature": signature,
    }
    return client.post(
        f"/api/v1/triggers/{trigger.name}/webhook",
        data=body,
        content_type="application/json",
        headers={**signed, **headers},
    )


@pytest.mark.django_db
def test_a_signed_delivery_creates_the_job_with_its_body_merged_and_a_redelivery_replays(client, vlevel):
    trigger = add_trigger(vlevel, "webhook", payload={})
    body = json.dumps({"urls": ["https://shop.test/hook"]}).encode()

    first = deliver(client, trigger, body, message_id="d-1")
    again = deliver(client, trigger, body, message_id="d-1")

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["jobId"] == again.json()["jobId"]
    assert set(first.json()) == {"jobId", "status"}
    job = Job.objects.get()
    assert (job.context["source"], job.payload) == ("webhook", {"urls": ["https://shop.test/hook"]})


@pytest.mark.django_db
def test_the_secret_is_shown_as_standard_webhooks_libraries_take_it(vlevel):
    trigger = add_trigger(vlevel, "webhook")

    secret = triggers.webhook_secret(trigger)

    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 32


@pytest.mark.django_db
def test_a_signature_list_verifies_when_one_of_them_matches(client, vlevel):
    """Standard Webhooks senders rotating a secret send one signature per secret, space separated."""
    trigger = add_trigger(vlevel, "webhook")
    now = datetime.now(tz=UTC)
    stale = Webhook(webhooks.secret_text(b"0" * 32)).sign("msg_1", now, "{}")
    current = Webhook(triggers.webhook_secret(trigger)).sign("msg_1", now, "{}")

    response = client.post(
        f"/api/v1/triggers/{trigger.name}/webhook",
        data=b"{}",
        content_type="application/json",
        headers={
            "webhook-id": "msg_1",
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": f"{stale} {current}",
        },
    )

    assert response.status_code == 201


@pytest.mark.django_db
@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param({"secret": webhooks.secret_text(b"0" * 32)}, id="wrong secret"),
        pytest.param({"age": 600}, id="stale timestamp"),
        pytest.param({"webhook-signature": ""}, id="no signature"),
        pytest.param({"webhook-id": ""}, id="no id"),
        pytest.param({"webhook-timestamp": "soon"}, id="timestamp not seconds"),
        pytest.param({"webhook-signature": "v1,é"}, id="not base64"),
    ],
)
def test_an_unsigned_or_badly_signed_delivery_is_401_and_creates_nothing(client, vlevel, tamper):
    trigger = add_trigger(vlevel, "webhook")
    headers = {k: v for k, v in tamper.items() if k.startswith("webhook-")}
    options = {k: v for k, v in tamper.items() if not k.startswith("webhook-")}

    response = deliver(client, trigger, b"{}", **options, **headers)

    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_an_agent_key_is_no_signature(client, vlevel):
    """A (possibly prompt-injected) agent cannot start another trigger's work with its own key."""
    trigger = add_trigger(vlevel, "webhook")
    key = issue_key(agent=load("agent.rag.indexer"))

    response = client.post(
        f"/api/v1/triggers/{trigger.name}/webhook",
        data=b"{}",
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )

    assert response.status_code == 401
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_rotated_secret_stops_the_old_one_at_once(client, vlevel):
    trigger = add_trigger(vlevel, "webhook")
    old = triggers.webhook_secret(trigger)

    triggers.rotate_secret(trigger, actor=SYSTEM)

    assert deliver(client, trigger, b"{}", secret=old).status_code == 401
    assert deliver(client, trigger, b"{}").status_code == 201


@pytest.mark.django_db
def test_unknown_disabled_or_non_webhook_triggers_are_404(client, vlevel):
    disabled = add_trigger(vlevel, "webhook", enabled=False)
    cron = add_trigger(vlevel, "cron", crontab=every_minute())

    assert deliver(client, disabled, b"{}").status_code == 404
    assert deliver(client, cron, b"{}").status_code == 404
    assert (
        client.post("/api/v1/triggers/nobody/webhook", data=b"{}", content_type="application/json").status_code == 404
    )


@pytest.mark.django_db
@pytest.mark.parametrize("body", [b"[1, 2]", b"not json"])
def test_a_body_that_is_not_a_json_object_is_422(client, vlevel, body):
    trigger = add_trigger(vlevel, "webhook")

    response = deliver(client, trigger, body)

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body"]
    assert not Job.objects.exists()


@pytest.mark.django_db
def test_a_delivery_the_manifest_refuses_is_422_at_the_payload_field(client, vlevel):
    trigger = add_trigger(vlevel, "webhook")

    response = deliver(client, trigger, json.dumps({"urls": "not a list"}).encode())

    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "payload", "urls"]


# Events -------------------------------------------------------------------------------------------


def subscribed_indexer(*patterns: str) -> Agent:
    """agent.rag.indexer with a manifest subscribing to the events of ``patterns``."""
    document = read_text(manifest_text("agent.rag.indexer"))
    document.update(version="2.1.0", events={"subscribe": list(patterns)})
    return load_manifest(document, actor=SYSTEM)[0].agent


@pytest.mark.django_db
def test_a_finished_job_fires_the_event_triggers_its_facts_match(vlevel):
    indexer = subscribed_indexer("agent.seo.vlevel")
    add_trigger(
        indexer,
        "event",
        intent="rag_reindex",
        payload={"documents": [{"id": 1}]},
        event="job.finished",
        event_filter={"agent": "agent.seo.vlevel", "status": ["succeeded"]},
    )

    done = finish_job(submit_job(vlevel, URLS, key="ok"), GOOD)
    failed = finish_job(submit_job(vlevel, URLS, key="ko"), {"success": False, "nextAction": "complete"})

    assert failed.status == "queued"  # a failure is retried, not finished: no event yet
    followed = Job.objects.get(agent=indexer)
    assert followed.context["source"] == "event"
    assert followed.payload["event"] == {
        "name": "job.finished",
        "subject": str(done.job_id),
        "depth": 1,
        "jobId": str(done.job_id),
        "agent": "agent.seo.vlevel",
        "intent": "seo_audit",
        "status": "succeeded",
    }


@pytest.mark.django_db
def test_an_event_chain_stops_after_its_limit(vlevel, settings):
    settings.JOB_TRIGGER_MAX_CHAIN = 2
    add_trigger(vlevel, "event", event="job.finished")

    job = submit_job(vlevel, URLS, key="root")
    for _ in range(3):
        finish_job(job, GOOD)
        job = Job.objects.filter(status="queued").first() or job

    assert Job.objects.filter(context__source="event").count() == 2
    assert AuditEvent.objects.filter(action="trigger.chain_stopped").count() == 1


@pytest.mark.django_db
def test_a_trigger_the_manifest_refuses_never_fails_the_result_that_fired_it(vlevel):
    indexer = subscribed_indexer("agent.seo.*")
    add_trigger(indexer, "event", intent="rag_reindex", payload={"documents": [{"id": 1}]}, event="job.finished")
    JobTrigger.objects.update(payload={})  # the indexer requires documents

    job = finish_job(submit_job(vlevel, URLS), GOOD)

    assert job.status == "succeeded"
    assert not Job.objects.filter(agent=indexer).exists()
    assert AuditEvent.objects.filter(action="trigger.refused").count() == 1


# The admin ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_admin_adds_a_webhook_trigger_and_reads_its_secret(client, vlevel):
    admin = UserFactory(username="alice", roles=["Admin"])
    admin.is_staff = True
    admin.save()
    client.force_login(admin)
    form = {
        "name": "shop-orders",
        "agent": vlevel.pk,
        "kind": "webhook",
        "enabled": "on",
        "intent": "seo_audit",
        "entity_type": "page",
        "payload": "{}",
        "constraints": "{}",
        "priority": "normal",
        "event_filter": "{}",
    }

    response = client.post(reverse("admin:agents_jobtrigger_add"), form)

    assert response.status_code == 302, response.content.decode()[:2000]
    trigger = JobTrigger.objects.get(name="shop-orders")
    assert AuditEvent.objects.get(action="trigger.added").actor == "user:alice"
    page = client.get(reverse("admin:agents_jobtrigger_change", args=[trigger.pk])).content.decode()
    assert triggers.webhook_secret(trigger) in page
    assert triggers.webhook_secret(trigger) not in json.dumps(list(AuditEvent.objects.values("data")), default=str)


@pytest.mark.django_db
def test_a_viewer_cannot_open_a_trigger(client, vlevel):
    viewer = UserFactory(username="victor", roles=["Viewer"])
    viewer.is_staff = True
    viewer.save()
    client.force_login(viewer)
    trigger = add_trigger(vlevel, "webhook")

    page = client.get(reverse("admin:agents_jobtrigger_change", args=[trigger.pk]))

    assert triggers.webhook_secret(trigger) not in page.content.decode()


@pytest.mark.django_db
def test_a_promoted_learning_fires_the_learning_promoted_triggers_of_its_domain(vlevel):
    from decimal import Decimal

    from memory import lifecycle
    from memory.models import ReuseScore
    from tests.factories.memory import LearningFactory

    add_trigger(vlevel, "event", event="learning.promoted", event_filter={"domain": "seo", "scope": "domain"})
    promoted = LearningFactory.create(scope="story", story="PD-1", domain="seo", tags=["#api"])
    elsewhere = LearningFactory.create(scope="story", story="PD-2", domain="rag", tags=["#api"])
    for item in (promoted, elsewhere):
        ReuseScore.objects.create(
            story=item.story,
            gate=item.gate,
            tags_hash=item.tags_hash,
            nb_injections=1,
            nb_stories_gate8_go=0,
            nb_domains=1,
            reuse_score=Decimal("0.5"),
            computed_at=timezone.now(),
        )

    assert lifecycle.propose_promotions(mode="auto").applied == 2

    job = Job.objects.get(agent=vlevel)
    assert job.context["source"] == "event"
    assert job.payload["event"]["learningId"] == promoted.pk
    assert (job.payload["event"]["previousScope"], job.payload["event"]["scope"]) == ("story", "domain")


@pytest.mark.django_db
def test_a_forged_negative_depth_buys_no_longer_chain(vlevel, settings):
    settings.JOB_TRIGGER_MAX_CHAIN = 2
    add_trigger(vlevel, "event", event="job.finished")

    job = submit_job(vlevel, {**URLS, "event": {"depth": -1000}}, key="forged")
    for _ in range(3):
        finish_job(job, GOOD)
        job = Job.objects.filter(status="queued").first() or job

    assert Job.objects.filter(context__source="event").count() == 2
