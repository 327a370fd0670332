"""Fleet admin: read-only records, manifest upload through the registry, version diffs."""

from __future__ import annotations

from datetime import timedelta
from html import unescape

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent, AgentManifest, Escalation, Job, KpiSample
from agents.registry import load_manifest
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from tests.factories.agents import AgentFactory, KpiSampleFactory
from tests.support.jobs import finish_job, submit_job
from tests.support.manifests import load_seed_manifests, manifest_text

UPLOAD = "admin:agents_agentmanifest_upload"
DIFF = "admin:agents_agentmanifest_diff"


@pytest.fixture
def fleet(db) -> dict[str, Agent]:
    return load_seed_manifests()


def rate(agent: Agent, value: float) -> None:
    KpiSampleFactory(agent=agent, metric_id="task_success_rate", value=value)


def page(response) -> str:
    return unescape(response.content.decode())


def written() -> tuple[int, int, int]:
    return Agent.objects.count(), AgentManifest.objects.count(), AuditEvent.objects.count()


# Agents ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_agent_list_shows_active_version_and_worst_status(admin_client, fleet):
    rate(fleet["agent.seo.architect"], 0.5)
    html = page(admin_client.get(reverse("admin:agents_agent_changelist")))

    assert "Active version" in html
    assert "Worst KPI status" in html
    row = html[html.index(">agent.seo.architect<") :].split("</tr>")[0]
    for text in ("SEO Architect Agent", "Architect", "seo-team", "1.2.0", "critical"):
        assert text in row


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"has_manifest": "no"}, {"agent.test.bare"}),
        ({"has_manifest": "yes"}, {"agent.seo.vlevel", "agent.seo.architect", "agent.rag.indexer"}),
        ({"kpi_status": "critical"}, {"agent.seo.architect"}),
        ({"kpi_status": "warning"}, {"agent.seo.vlevel"}),
        ({"kpi_status": "no_data"}, {"agent.rag.indexer", "agent.test.bare"}),
        ({"role__exact": "executor"}, {"agent.seo.vlevel", "agent.rag.indexer"}),
        ({"owner__exact": "knowledge-team"}, {"agent.rag.indexer"}),
    ],
)
def test_the_agent_list_filters(admin_client, fleet, params, expected):
    AgentFactory(agent_id="agent.test.bare")
    rate(fleet["agent.seo.architect"], 0.5)
    rate(fleet["agent.seo.vlevel"], 0.8)

    html = page(admin_client.get(reverse("admin:agents_agent_changelist"), params))

    shown = {agent_id for agent_id in [*fleet, "agent.test.bare"] if f">{agent_id}</a>" in html}
    assert shown == expected


@pytest.mark.django_db
def test_the_agent_list_rates_the_page_in_constant_queries(admin_client, fleet, django_assert_max_num_queries):
    for n in range(20):
        load_manifest(manifest_text("agent.seo.architect", id=f"agent.bulk.a{n:02d}"), actor=SYSTEM)

    with django_assert_max_num_queries(15):
        response = admin_client.get(reverse("admin:agents_agent_changelist"))

    assert response.content.decode().count(">agent.bulk.a") == 20


# Read-only -------------------------------------------------------------------------------------


@pytest.fixture
def escalated_job(fleet) -> Job:
    urls = ["https://shop.test/a"]
    job = submit_job(fleet["agent.seo.vlevel"], {"urls": urls}, key="escalated")
    data = {"scores": [{"url": urls[0], "level": "V2"}], "recommendations": []}
    return finish_job(job, {"success": True, "data": data, "confidence": 0.4})


@pytest.mark.django_db
@pytest.mark.parametrize("model", ["agent", "agentmanifest", "job", "escalation", "kpisample", "toolcall"])
def test_nothing_can_be_added_or_deleted(admin_client, escalated_job, model):
    changelist = page(admin_client.get(reverse(f"admin:agents_{model}_changelist")))

    assert "delete_selected" not in changelist
    assert admin_client.get(reverse(f"admin:agents_{model}_add")).status_code == 403
    obj = {
        "agent": escalated_job.agent,
        "agentmanifest": escalated_job.manifest,
        "job": escalated_job,
        "escalation": escalated_job.escalations.get(),
        "kpisample": KpiSample.objects.first(),
    }.get(model)
    if obj is not None:
        assert (
            admin_client.post(reverse(f"admin:agents_{model}_delete", args=[obj.pk]), {"post": "yes"}).status_code
            == 403
        )
        change = page(admin_client.get(reverse(f"admin:agents_{model}_change", args=[obj.pk])))
        assert 'name="_save"' not in change
        assert "/delete/" not in change


@pytest.mark.django_db
def test_a_manifest_page_shows_the_document_pretty_printed(admin_client, fleet):
    manifest = fleet["agent.seo.vlevel"].active_manifest
    html = page(admin_client.get(reverse("admin:agents_agentmanifest_change", args=[manifest.pk])))

    assert "<pre" in html
    assert "  pre_conditions:\n" in html
    assert "mcp__chrome-devtools__take_snapshot" in html


# Upload ----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_manifest_list_offers_the_upload_to_admins_only(admin_client, client, staff_viewer):
    assert reverse(UPLOAD) in page(admin_client.get(reverse("admin:agents_agentmanifest_changelist")))

    client.force_login(staff_viewer)
    assert reverse(UPLOAD) not in page(client.get(reverse("admin:agents_agentmanifest_changelist")))
    assert client.get(reverse(UPLOAD)).status_code == 403
    assert client.post(reverse(UPLOAD), {"text": manifest_text("agent.seo.vlevel")}).status_code == 403
    assert not AgentManifest.objects.exists()


@pytest.mark.django_db
def test_a_pasted_manifest_is_activated_then_unchanged(admin_client):
    text = manifest_text("agent.seo.architect")

    first = admin_client.post(reverse(UPLOAD), {"text": text}, follow=True)
    second = admin_client.post(reverse(UPLOAD), {"text": text}, follow=True)

    assert "agent.seo.architect 1.2.0 activated" in page(first)
    assert "agent.seo.architect 1.2.0 unchanged" in page(second)
    agent = Agent.objects.get(agent_id="agent.seo.architect")
    assert agent.active_manifest.version == "1.2.0"
    assert agent.manifests.count() == 1
    assert AuditEvent.objects.filter(action="manifest.activated", actor="user:admin").count() == 1


@pytest.mark.django_db
def test_an_uploaded_file_is_activated(admin_client):
    upload = SimpleUploadedFile("indexer.yaml", manifest_text("agent.rag.indexer").encode(), "application/yaml")

    response = admin_client.post(reverse(UPLOAD), {"file": upload}, follow=True)

    assert "agent.rag.indexer 2.0.1 activated" in page(response)
    assert Agent.objects.get(agent_id="agent.rag.indexer").active_manifest.version == "2.0.1"


@pytest.mark.django_db
def test_an_invalid_manifest_shows_every_error_with_its_path_and_writes_nothing(admin_client):
    text = manifest_text("agent.seo.vlevel").replace("role: EXECUTOR", "role: PIRATE")
    text = text.replace("rate_limit: 30", "rate_limit: 0")
    before = written()

    response = admin_client.post(reverse(UPLOAD), {"text": text})

    html = page(response)
    assert response.status_code == 200
    assert "The manifest is invalid." in html
    assert "<code>role</code>:" in html
    assert "<code>tools.1.rate_limit</code>:" in html
    assert "greater than 0" in html
    assert written() == before


@pytest.mark.django_db
def test_a_lower_version_is_refused_with_the_registry_reason(admin_client, fleet):
    before = written()
    text = manifest_text("agent.seo.vlevel", version="0.9.0")

    html = page(admin_client.post(reverse(UPLOAD), {"text": text}))

    assert "versions only go up" in html
    assert written() == before


@pytest.mark.django_db
def test_an_upload_needs_a_file_or_a_text(admin_client):
    html = page(admin_client.post(reverse(UPLOAD), {"text": "  "}))
    assert "Upload a file or paste the manifest" in html


@pytest.mark.django_db
def test_text_that_is_not_yaml_is_reported(admin_client):
    html = page(admin_client.post(reverse(UPLOAD), {"text": "id: [unclosed"}))
    assert "not valid YAML or JSON" in html
    assert not Agent.objects.exists()


# Diff ------------------------------------------------------------------------------------------


@pytest.fixture
def two_versions(fleet) -> tuple[AgentManifest, AgentManifest]:
    text = manifest_text("agent.seo.vlevel", version="1.1.0", owner="seo-platform")
    newer, _ = load_manifest(text, actor=SYSTEM)
    return AgentManifest.objects.get(agent=newer.agent, version="1.0.0"), newer


@pytest.mark.django_db
def test_the_diff_shows_the_changed_lines(admin_client, two_versions):
    params = {"agent": "agent.seo.vlevel", "a": "1.0.0", "b": "1.1.0"}

    html = page(admin_client.get(reverse(DIFF), params))

    assert "--- agent.seo.vlevel 1.0.0" in html
    assert "+++ agent.seo.vlevel 1.1.0" in html
    assert "\n-owner: seo-team\n" in html
    assert "\n+owner: seo-platform\n" in html
    assert "\n-version: 1.0.0\n" in html
    assert "mcp__supabase__execute_sql" not in html.split("+++")[1]  # unchanged lines stay out


@pytest.mark.django_db
def test_the_diff_defaults_to_the_previous_and_newest_version(admin_client, two_versions):
    html = page(admin_client.get(reverse(DIFF), {"agent": "agent.seo.vlevel"}))
    assert "+owner: seo-platform" in html


@pytest.mark.django_db
def test_the_diff_refuses_an_unknown_version_and_agent(admin_client, two_versions):
    html = page(admin_client.get(reverse(DIFF), {"agent": "agent.seo.vlevel", "a": "7.0.0", "b": "1.1.0"}))
    assert "Select a valid choice" in html
    assert admin_client.get(reverse(DIFF), {"agent": "agent.nobody"}).status_code == 404


@pytest.mark.django_db
def test_each_manifest_page_links_to_the_diff_with_a_version_picker(admin_client, two_versions):
    _, newer = two_versions

    html = page(admin_client.get(reverse("admin:agents_agentmanifest_change", args=[newer.pk])))

    assert f'action="{reverse(DIFF)}"' in html
    assert '<option value="1.0.0" selected>1.0.0</option>' in html
    assert 'value="agent.seo.vlevel"' in html


# Jobs ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_job_list_filters_escalated_jobs(admin_client, fleet, escalated_job):
    plain = submit_job(fleet["agent.seo.vlevel"], {"urls": ["https://shop.test/b"]}, key="plain")
    url = reverse("admin:agents_job_changelist")

    escalated = page(admin_client.get(url, {"escalated": "yes"}))
    not_escalated = page(admin_client.get(url, {"escalated": "no"}))

    assert str(escalated_job.job_id) in escalated
    assert str(plain.job_id) not in escalated
    assert str(plain.job_id) in not_escalated
    assert str(escalated_job.job_id) not in not_escalated


@pytest.mark.django_db
def test_a_job_page_shows_its_artifacts_and_escalation_steps(admin_client, escalated_job):
    html = page(admin_client.get(reverse("admin:agents_job_change", args=[escalated_job.job_id])))

    assert reverse("agents:job-artifact", args=[escalated_job.job_id, "audit"]) in html
    assert ".graph.json" in html
    assert "routed_to_agent" in html
    assert "confidence < 0.7" in html


@pytest.mark.django_db
def test_the_escalation_page_lists_its_steps(admin_client, escalated_job):
    escalation = Escalation.objects.get(job=escalated_job)
    html = page(admin_client.get(reverse("admin:agents_escalation_change", args=[escalation.pk])))

    assert "opened" in html
    assert "routed_to_agent" in html
    assert "agent.seo.architect" in html


@pytest.mark.django_db
def test_kpi_samples_are_listed(admin_client, fleet):
    rate(fleet["agent.seo.vlevel"], 0.42)
    KpiSampleFactory(
        agent=fleet["agent.seo.vlevel"],
        metric_id="avg_processing_time",
        value=1,
        recorded_at=timezone.now() - timedelta(days=1),
    )
    html = page(admin_client.get(reverse("admin:agents_kpisample_changelist")))
    assert "0.42" in html
    assert "avg_processing_time" in html
