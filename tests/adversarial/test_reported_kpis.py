"""An agent does not write its own KPIs: what the platform can derive from the jobs (success,
processing time, escalations) is derived, and what the agent reports is kept beside it, labelled as
reported, never in its place.

Finding 12: five failed results each claiming `metrics.task_success_rate: 1.0` raised the agent's
success rate, since a reported value won over the derived one."""

from __future__ import annotations

import re

import pytest

from agents.models import Job, KpiAlert
from tests.agents.test_jobs import envelope


def by_metric(api) -> dict:
    response = api.get("/agents/agent.seo.vlevel/kpis")
    assert response.status_code == 200, response.content
    return {item["metric_id"]: item for item in response.json()["items"]}


def failed_result_claiming(api, n: int, metrics: dict) -> None:
    job = api.post("/jobs", envelope(payload={"urls": [f"https://e.com/{n}"]})).json()
    api.post(f"/jobs/{job['jobId']}/lease", {})
    Job.objects.filter(pk=job["jobId"]).update(attempts=3)  # no retry left: the failure counts now
    response = api.post(f"/jobs/{job['jobId']}/result", {"success": False, "metrics": metrics})
    assert response.status_code == 200, response.content


@pytest.mark.django_db
def test_five_failed_results_claiming_full_success_leave_the_success_rate_at_zero(vlevel_api, viewer_api):
    for n in range(5):
        failed_result_claiming(vlevel_api, n, {"task_success_rate": 1.0, "avg_processing_time": 1})

    for api in (vlevel_api, viewer_api):  # the agent itself and an operator read the same figures
        kpis = by_metric(api)
        success = kpis["task_success_rate"]
        assert (success["current"], success["status"]) == (0.0, "critical")
        assert success["source"] == "derived"
        assert success["reported"] == 1.0  # kept, and shown as the agent's own claim
        duration = kpis["avg_processing_time"]
        assert duration["source"] == "derived"
        assert duration["reported"] == 1
        assert duration["current"] != 1
    alert = KpiAlert.objects.get(metric_id="task_success_rate")  # the inbox heard of the real rate
    assert alert.value == 0.0


@pytest.mark.django_db
def test_the_agent_page_labels_the_reported_figure(vlevel_api, client, admin_operator):
    failed_result_claiming(vlevel_api, 0, {"task_success_rate": 1.0})
    client.force_login(admin_operator)

    page = client.get("/agents/agent.seo.vlevel/").content.decode()

    assert "Reported by the agent</th>" in page
    row = page[page.index('<tr id="kpi-task_success_rate">') :]
    row = row[: row.index("</tr>")]
    cells = re.findall(r'<td class="num">([^<]*)</td>', row)
    assert (cells[0], cells[-1]) == ("0", "1")  # current: derived; last column: the agent's claim
