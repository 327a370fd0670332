"""Operator pages of the fleet: what a signed-in operator sees, filters, htmx partials, access."""

from __future__ import annotations

import re
from datetime import timedelta
from uuid import uuid4

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents.models import Agent, Job, KpiSample
from agents.registry import load_manifest
from governance.kernel.principals import SYSTEM
from governance.kernel.templatetags.kpi_charts import chart_geometry
from tests.factories.agents import AgentFactory
from tests.support.jobs import finish_job, submit_job
from tests.support.manifests import load_seed_manifests, manifest_text

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def fleet(db) -> dict[str, Agent]:
    return load_seed_manifests()


def add_samples(agent: Agent, metric_id: str, values: list[float], *, days_ago: int = 0) -> None:
    now = timezone.now()
    KpiSample.objects.bulk_create(
        KpiSample(agent=agent, metric_id=metric_id, value=value, recorded_at=now - timedelta(days=days_ago, hours=i))
        for i, value in enumerate(values)
    )


def audit(agent: Agent, n: int, **output: object) -> Job:
    """A finished seo_audit job; ``output`` overrides the successful answer."""
    urls = [f"https://shop.test/{n}/{i}" for i in range(2)]
    job = submit_job(agent, {"urls": urls}, key=f"audit-{n}")
    scores = [{"url": u, "level": "V2"} for u in urls]
    answer = {"success": True, "data": {"scores": scores, "recommendations": []}, "confidence": 0.9, **output}
    return finish_job(job, answer)


def count_queries(client, url: str, params: dict) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url, params).status_code == 200
    return len(queries)


def order_of(html: str, agent_ids: list[str]) -> list[str]:
    found = re.findall(r"<code>(agent\.[a-z0-9_.]+)</code>", html)
    return [agent_id for agent_id in found if agent_id in agent_ids]


@pytest.fixture
def rated_fleet(fleet) -> dict[str, Agent]:
    """architect critical, vlevel warning, indexer ok, two agents without a manifest (no data)."""
    add_samples(fleet["agent.seo.architect"], "task_success_rate", [0.5, 0.5])
    add_samples(fleet["agent.seo.vlevel"], "task_success_rate", [0.8, 0.8])
    add_samples(fleet["agent.rag.indexer"], "task_success_rate", [0.99])
    add_samples(fleet["agent.rag.indexer"], "avg_processing_time", [1000])
    AgentFactory(agent_id="agent.test.b")
    AgentFactory(agent_id="agent.test.a")
    return fleet


ORDER = ["agent.seo.architect", "agent.seo.vlevel", "agent.rag.indexer", "agent.test.a", "agent.test.b"]


# Access ----------------------------------------------------------------------------------------


@pytest.fixture
def finished_job(fleet) -> Job:
    return audit(fleet["agent.seo.vlevel"], 1)


def every_page(job: Job) -> list[str]:
    return [
        reverse("agents:agent-list"),
        reverse("agents:agent-detail", args=["agent.seo.vlevel"]),
        reverse("agents:agent-manifest", args=["agent.seo.vlevel", "1.0.0"]),
        reverse("agents:job-list"),
        reverse("agents:job-detail", args=[job.job_id]),
        reverse("agents:job-artifact", args=[job.job_id, "audit"]),
    ]


@pytest.mark.django_db
def test_every_page_sends_anonymous_visitors_to_the_login(client, finished_job):
    for url in every_page(finished_job):
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
def test_every_page_is_forbidden_to_an_account_without_a_role(client, outsider, finished_job):
    client.force_login(outsider)
    for url in every_page(finished_job):
        assert client.get(url).status_code == 403, url
        assert client.get(url, **HTMX).status_code == 403, url


@pytest.mark.django_db
def test_every_page_answers_a_viewer(client, viewer, finished_job):
    client.force_login(viewer)
    for url in every_page(finished_job):
        assert client.get(url).status_code == 200, url


# Fleet -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_fleet_lists_the_worst_status_first(client, viewer, rated_fleet):
    client.force_login(viewer)
    html = client.get(reverse("agents:agent-list")).content.decode()

    assert order_of(html, ORDER) == ORDER
    for status in ("status-critical", "status-warning", "status-ok", "status-no_data"):
        assert status in html


@pytest.mark.django_db
def test_the_fleet_shows_role_domain_owner_and_active_version(client, viewer, fleet):
    client.force_login(viewer)
    html = client.get(reverse("agents:agent-list")).content.decode()

    row = html[html.index("<code>agent.rag.indexer</code>") :].split("</tr>")[0]
    for text in ("Executor", "RAG", "knowledge-team", "2.0.1"):
        assert text in row


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"role": "architect"}, ["agent.seo.architect"]),
        ({"domain": "seo"}, ["agent.seo.vlevel", "agent.seo.architect"]),
        ({"owner": "knowledge-team"}, ["agent.rag.indexer"]),
        ({"status": "warning"}, ["agent.seo.vlevel"]),
        ({"status": "no_data"}, ["agent.test.a", "agent.test.b"]),
        ({"domain": "seo", "status": "critical"}, ["agent.seo.architect"]),
    ],
)
def test_filters_narrow_the_fleet_on_full_page_and_htmx_swap(client, viewer, rated_fleet, params, expected):
    client.force_login(viewer)

    page = client.get(reverse("agents:agent-list"), params)
    partial = client.get(reverse("agents:agent-list"), params, **HTMX)

    assert "<html" in page.content.decode()
    assert "<html" not in partial.content.decode()
    assert order_of(page.content.decode(), ORDER) == order_of(partial.content.decode(), ORDER)
    assert sorted(order_of(partial.content.decode(), ORDER)) == sorted(expected)


@pytest.mark.django_db
def test_the_filter_form_swaps_the_rows_with_htmx_and_pushes_the_url(client, viewer, fleet):
    client.force_login(viewer)
    html = client.get(reverse("agents:agent-list")).content.decode()

    assert 'hx-get="/agents/"' in html
    assert 'hx-target="#agent-rows"' in html
    assert 'hx-push-url="true"' in html
    assert 'id="agent-rows"' in html


@pytest.mark.django_db
def test_an_unknown_filter_value_is_ignored(client, viewer, fleet):
    client.force_login(viewer)
    html = client.get(reverse("agents:agent-list"), {"role": "pirate"}).content.decode()

    assert len(order_of(html, list(fleet))) == 3


@pytest.mark.django_db
def test_the_fleet_page_needs_a_constant_number_of_queries(client, viewer, fleet, django_assert_max_num_queries):
    client.force_login(viewer)
    few = count_queries(client, reverse("agents:agent-list"), {"domain": "seo"})
    for n in range(20):
        agent_id = f"agent.bulk.a{n:02d}"
        load_manifest(manifest_text("agent.seo.architect", id=agent_id), actor=SYSTEM)
        add_samples(Agent.objects.get(agent_id=agent_id), "task_success_rate", [0.5 + n / 50])

    with django_assert_max_num_queries(few):
        response = client.get(reverse("agents:agent-list"), {"domain": "seo"})

    assert response.content.decode().count("<code>agent.bulk.a") == 20
    assert few <= 10


# Agent page ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_agent_page_shows_identity_tools_and_versions(client, viewer, fleet):
    load_manifest(manifest_text("agent.seo.vlevel", version="1.1.0"), actor=SYSTEM)
    client.force_login(viewer)

    html = client.get(reverse("agents:agent-detail", args=["agent.seo.vlevel"])).content.decode()

    assert "V-Level Generator Agent" in html
    assert "seo-team" in html
    assert "mcp__chrome-devtools__take_snapshot" in html
    assert "30/min" in html
    assert "Execute" in html
    assert 'href="/agents/agent.seo.vlevel/manifests/1.0.0/"' in html
    assert 'href="/agents/agent.seo.vlevel/manifests/1.1.0/"' in html


@pytest.mark.django_db
def test_an_older_version_document_stays_readable(client, viewer, fleet):
    load_manifest(manifest_text("agent.seo.vlevel", version="1.1.0"), actor=SYSTEM)
    client.force_login(viewer)

    html = client.get(reverse("agents:agent-manifest", args=["agent.seo.vlevel", "1.0.0"])).content.decode()

    assert "version: 1.0.0" in html
    assert "An older version" in html
    assert client.get(reverse("agents:agent-manifest", args=["agent.seo.vlevel", "9.9.9"])).status_code == 404


@pytest.mark.django_db
def test_the_kpi_table_rates_each_kpi_and_draws_its_trend(client, viewer, fleet):
    vlevel = fleet["agent.seo.vlevel"]
    for day in range(3):
        add_samples(vlevel, "task_success_rate", [0.8], days_ago=day)
    client.force_login(viewer)

    html = client.get(reverse("agents:agent-detail", args=["agent.seo.vlevel"])).content.decode()

    success_row = html[html.index("<code>task_success_rate</code>") :].split("</tr>")[0]
    assert "0.8" in success_row
    assert "status-warning" in success_row
    assert "0.85" in success_row  # the warning threshold
    time_row = html[html.index("<code>avg_processing_time</code>") :].split("</tr>")[0]
    assert "status-no_data" in time_row
    assert "milliseconds" in time_row
    assert "no samples" in time_row
    assert html.count("<svg") == 1
    points = re.search(r'<polyline class="trend" points="([^"]+)"', success_row).group(1)
    assert len(points.split()) == 3


@pytest.mark.django_db
def test_the_window_selector_swaps_the_kpi_partial(client, viewer, fleet):
    vlevel = fleet["agent.seo.vlevel"]
    add_samples(vlevel, "task_success_rate", [0.8])
    add_samples(vlevel, "task_success_rate", [0.1, 0.1], days_ago=20)
    client.force_login(viewer)
    url = reverse("agents:agent-detail", args=["agent.seo.vlevel"])

    week = client.get(url, **HTMX).content.decode()
    month = client.get(url, {"window": "30"}, **HTMX).content.decode()

    assert "<html" not in month
    assert "last 7 days" in week
    assert "status-warning" in week
    assert "last 30 days" in month
    assert "status-critical" in month
    assert 'hx-target="#kpis"' in client.get(url).content.decode()


@pytest.mark.django_db
def test_the_agent_page_lists_recent_jobs_linking_to_each_job(client, viewer, fleet):
    jobs = [audit(fleet["agent.seo.vlevel"], n) for n in range(22)]
    client.force_login(viewer)

    html = client.get(reverse("agents:agent-detail", args=["agent.seo.vlevel"])).content.decode()

    assert len(job_links(html)) == 20
    assert reverse("agents:job-detail", args=[jobs[-1].job_id]) in html
    assert reverse("agents:job-detail", args=[jobs[0].job_id]) not in html


@pytest.mark.django_db
def test_an_unknown_agent_is_not_found(client, viewer, fleet):
    client.force_login(viewer)
    assert client.get(reverse("agents:agent-detail", args=["agent.nobody"])).status_code == 404


def test_the_trend_chart_maps_points_into_the_box():
    chart = chart_geometry([("2025-01-01", 0.9), ("2025-01-02", 0.8), ("2025-01-03", 0.7)], 0.85, 0.7)

    xs, ys = zip(*(map(float, p.split(",")) for p in chart["points"].split()), strict=True)
    assert xs[0] < xs[1] < xs[2] <= chart["width"]
    assert ys[0] < ys[1] < ys[2] <= chart["height"]  # higher values are drawn higher up
    assert chart["critical_y"] == ys[2]  # the critical line passes through the 0.7 point
    assert ys[0] < chart["warning_y"] < ys[1]


def test_a_far_away_critical_threshold_does_not_squash_the_line():
    chart = chart_geometry([("2025-01-01", 4000.0), ("2025-01-02", 6000.0)], 10000, 30000)

    assert chart["critical_y"] is None
    assert chart["warning_y"] == 3  # the top of the box


def test_a_single_point_is_drawn_as_a_flat_segment():
    chart = chart_geometry([("2025-01-01", 5.0)])

    assert len(chart["points"].split()) == 2
    assert len({p.split(",")[1] for p in chart["points"].split()}) == 1


# Jobs ------------------------------------------------------------------------------------------


@pytest.fixture
def job_mix(fleet) -> dict[str, Job | None]:
    vlevel, indexer = fleet["agent.seo.vlevel"], fleet["agent.rag.indexer"]
    escalated = audit(vlevel, 2, confidence=0.5)
    return {
        "ok": audit(vlevel, 1),
        "escalated": escalated,
        "to_architect": escalated.escalations.get().child_job,
        "queued": submit_job(vlevel, {"urls": ["https://shop.test/q"]}, key="queued"),
        "indexed": finish_job(
            submit_job(indexer, {"documents": [{"id": 1}]}, intent="rag_reindex", key="reindex"),
            {"success": True, "data": {"indexed": 1}},
        ),
    }


def job_links(html: str) -> set[str]:
    return set(re.findall(r'href="/agents/jobs/([0-9a-f-]{36})/"', html))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({}, {"ok", "escalated", "to_architect", "queued", "indexed"}),
        ({"status": "queued"}, {"queued", "to_architect"}),
        ({"agent": "agent.seo.architect"}, {"to_architect"}),
        ({"intent": "rag_reindex"}, {"indexed"}),
        ({"agent": "agent.rag.indexer"}, {"indexed"}),
        ({"escalated": "yes"}, {"escalated"}),
        ({"escalated": "no", "agent": "agent.seo.vlevel"}, {"ok", "queued"}),
    ],
)
def test_job_filters_narrow_the_list_on_full_page_and_htmx_swap(client, viewer, job_mix, params, expected):
    client.force_login(viewer)
    wanted = {str(job_mix[name].job_id) for name in expected}

    page = client.get(reverse("agents:job-list"), params).content.decode()
    partial = client.get(reverse("agents:job-list"), params, **HTMX).content.decode()

    assert "<html" in page
    assert "<html" not in partial
    assert job_links(page) == job_links(partial) == wanted


@pytest.mark.django_db
def test_the_job_list_pages_by_fifty(client, viewer, fleet):
    for n in range(55):
        submit_job(fleet["agent.seo.vlevel"], {"urls": [f"https://shop.test/{n}"]}, key=f"page-{n}")
    client.force_login(viewer)

    first = client.get(reverse("agents:job-list")).content.decode()
    second = client.get(reverse("agents:job-list"), {"page": 2}, **HTMX).content.decode()

    assert len(job_links(first)) == 50
    assert len(job_links(second)) == 5
    assert "Page 1 of 2" in first
    assert 'hx-get="?page=2"' in first


@pytest.mark.django_db
def test_the_job_list_needs_a_constant_number_of_queries(client, viewer, fleet, django_assert_max_num_queries):
    client.force_login(viewer)
    audit(fleet["agent.seo.vlevel"], 100)
    few = count_queries(client, reverse("agents:job-list"), {})
    for n in range(12):
        audit(fleet["agent.seo.vlevel"], n, confidence=0.5 if n % 2 else 0.9)
        submit_job(fleet["agent.rag.indexer"], {"documents": [{"id": n}]}, intent="rag_reindex", key=f"r{n}")

    with django_assert_max_num_queries(few):
        html = client.get(reverse("agents:job-list")).content.decode()

    assert len(job_links(html)) >= 25
    assert few <= 10


@pytest.mark.django_db
def test_the_job_page_shows_envelope_state_conditions_and_escalation(client, viewer, job_mix):
    job = job_mix["escalated"]
    client.force_login(viewer)

    html = client.get(reverse("agents:job-detail", args=[job.job_id])).content.decode()

    assert "seo_audit" in html
    assert "https://shop.test/2/0" in html  # payload
    assert "maxTokens" in html  # constraints
    assert "<code>work</code>" in html  # the visited path
    assert "tokensRemaining" in html
    assert "INVALID_URL_COUNT" in html  # pre-condition
    assert "SCORE_MISMATCH" in html  # post-condition
    assert "confidence &lt; 0.7" in html
    assert "routed_to_agent" in html
    assert "agent.seo.architect" in html
    for kind in ("audit", "backlog", "graph"):
        assert reverse("agents:job-artifact", args=[job.job_id, kind]) in html


@pytest.mark.django_db
def test_a_failed_post_condition_shows_its_error_code(client, viewer, fleet):
    job = audit(fleet["agent.seo.vlevel"], 7, data={"scores": []})
    client.force_login(viewer)

    html = client.get(reverse("agents:job-detail", args=[job.job_id])).content.decode()

    post = html[html.index("Post-conditions") :]
    assert 'status-critical">fail' in post
    assert "SCORE_MISMATCH" in post


@pytest.mark.django_db
def test_an_artifact_downloads_as_an_attachment(client, viewer, finished_job):
    artifact = finished_job.artifact_files.get(kind="backlog")
    client.force_login(viewer)

    response = client.get(reverse("agents:job-artifact", args=[finished_job.job_id, "backlog"]))

    assert response.status_code == 200
    assert response["Content-Disposition"] == f'attachment; filename="{artifact.name}"'
    assert response["Content-Type"].startswith("application/json")
    assert response.content.decode() == artifact.content
    assert f'"job_id": "{finished_job.job_id}"' in response.content.decode()


@pytest.mark.django_db
def test_artifacts_are_not_found_before_the_job_finishes(client, viewer, job_mix):
    client.force_login(viewer)
    queued = job_mix["queued"]

    assert client.get(reverse("agents:job-artifact", args=[queued.job_id, "audit"])).status_code == 404
    assert client.get(reverse("agents:job-artifact", args=[job_mix["ok"].job_id, "secrets"])).status_code == 404
    assert client.get(reverse("agents:job-detail", args=[uuid4()])).status_code == 404


def test_the_job_page_shows_what_the_job_was_told_at_its_first_lease(client, viewer, finished_job):
    client.force_login(viewer)

    html = client.get(reverse("agents:job-detail", args=[finished_job.job_id])).content.decode()

    assert "What the job was told" in html
    assert f"Truth level</dt><dd>{finished_job.rag_context['truthLevel']}" in html
    assert "## Learnings" in html  # the step-0 block as it was served
