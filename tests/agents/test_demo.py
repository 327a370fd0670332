"""`load_demo` builds a fleet worth looking at, through the real services, and can run again."""

from __future__ import annotations

from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command

from agents.models import Agent, AgentManifest, Escalation, Job, JobArtifact, KpiSample
from governance.kernel.models import ApiKey
from governance.reviews.models import ReviewItem
from tests.factories.governance import UserFactory
from tests.support.manifests import manifest_text

DEMO_AGENTS = ["agent.rag.indexer", "agent.seo.architect", "agent.seo.vlevel"]


def _load() -> str:
    out = StringIO()
    call_command("load_demo", stdout=out)
    return out.getvalue()


def _counts() -> dict[str, int]:
    return {
        model.__name__: model.objects.count()
        for model in (Agent, AgentManifest, Job, JobArtifact, Escalation, KpiSample, ReviewItem)
    }


@pytest.mark.django_db
def test_the_demo_loads_the_three_seed_manifests():
    output = _load()

    agents = Agent.objects.select_related("active_manifest").in_bulk(DEMO_AGENTS, field_name="agent_id")
    assert sorted(agents) == DEMO_AGENTS
    assert all(agent.active_manifest is not None for agent in agents.values())
    assert agents["agent.seo.vlevel"].active_manifest.version == "1.0.0"
    assert "Manifest agent.seo.vlevel 1.0.0: activated" in output


@pytest.mark.django_db
def test_the_demo_jobs_succeed_fail_and_escalate():
    _load()

    jobs = Job.objects.select_related("agent")
    assert jobs.filter(status=Job.Status.SUCCEEDED).count() >= 4
    failed = jobs.get(status=Job.Status.FAILED)
    assert failed.agent.agent_id == "agent.rag.indexer"
    assert [r["error_code"] for r in failed.post_conditions if not r["passed"]] == ["INDEX_OVERCOUNT"]
    to_architect = Escalation.objects.filter(target_agent__agent_id="agent.seo.architect")
    assert to_architect.count() == 2
    assert to_architect.filter(status=Escalation.Status.HANDLED).exists()
    to_inbox = Escalation.objects.get(job__agent__agent_id="agent.seo.architect")
    assert to_inbox.review_item.status == ReviewItem.Status.PENDING
    assert JobArtifact.objects.filter(job=failed).count() == 3


@pytest.mark.django_db
def test_the_fleet_shows_ok_warning_and_critical():
    _load()

    agents = list(Agent.objects.filter(agent_id__in=DEMO_AGENTS))
    statuses = KpiSample.objects.worst_statuses(agents, settings.KPI_WINDOW_DAYS)
    by_id = {agent.agent_id: statuses[agent.pk] for agent in agents}
    assert by_id == {"agent.seo.architect": "ok", "agent.seo.vlevel": "warning", "agent.rag.indexer": "critical"}
    assert KpiSample.objects.filter(job__isnull=True).dates("recorded_at", "day").count() >= 14


@pytest.mark.django_db
def test_loading_the_demo_twice_creates_no_duplicates():
    _load()
    before = _counts()

    output = _load()

    assert _counts() == before
    assert "Demo data: not loaded" in output
    assert "Demo jobs" not in output


@pytest.mark.django_db
def test_a_later_load_never_fights_an_operators_manifest_upgrade():
    from agents.manifest import read_text
    from agents.registry import load_manifest
    from governance.kernel.principals import SYSTEM

    _load()
    upgraded = read_text(manifest_text("agent.rag.indexer"))
    load_manifest({**upgraded, "version": "9.0.0"}, actor=SYSTEM)

    output = _load()  # `make run` again, after the operator's upgrade

    assert "Demo data: not loaded" in output
    assert Agent.objects.get(agent_id="agent.rag.indexer").active_manifest.version == "9.0.0"


@pytest.mark.django_db
def test_the_first_run_makes_one_key_per_demo_agent_and_later_runs_leave_them_alone():
    first = _load()
    keys = list(ApiKey.objects.filter(agent__agent_id__in=DEMO_AGENTS).values_list("pk", "key_hash", "revoked_at"))
    later = _load()

    live = ApiKey.objects.filter(agent__agent_id__in=DEMO_AGENTS, revoked_at__isnull=True)
    assert sorted(live.values_list("agent__agent_id", flat=True)) == DEMO_AGENTS
    assert "gov_ag_" in first
    assert (
        list(ApiKey.objects.filter(agent__agent_id__in=DEMO_AGENTS).values_list("pk", "key_hash", "revoked_at")) == keys
    )
    assert "gov_ag_" not in later


@pytest.mark.django_db
def test_the_demo_shows_a_cron_triggered_job_with_its_rag_context_a_kpi_escalation_and_skills(client):
    from agents.models import JobTrigger, KpiAlert

    output = _load()

    trigger = JobTrigger.objects.get(name="vlevel-nightly-audit")
    assert (trigger.kind, trigger.crontab.minute, trigger.crontab.hour) == ("cron", "0", "2")
    assert "Job trigger vlevel-nightly-audit" in output
    cron_job = Job.objects.get(context__source="cron")
    assert cron_job.priority == "high"
    documents = cron_job.rag_context["documents"]  # leased after memory loaded: PD-204's clarification
    assert [doc["kind"] for doc in documents if doc["kind"] == "clarification"] == ["clarification"]
    assert cron_job.rag_context["truthLevel"] == "L1"
    alert = KpiAlert.objects.get()
    assert (alert.agent.agent_id, alert.metric_id) == ("agent.rag.indexer", "task_success_rate")
    assert alert.review_item.status == ReviewItem.Status.PENDING
    client.force_login(UserFactory(username="victor", roles=["Viewer"]))
    page = client.get("/agents/agent.seo.vlevel/").content.decode()
    assert page.count('class="status status-ok">ready') == 3
