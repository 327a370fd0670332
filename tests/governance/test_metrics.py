"""GET /metrics: who may read it, and whether its figures are the database's and every process's."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from agents.models import Job, KpiAlert, ToolCall
from governance.contracts.models import ContractCheck
from governance.kernel.models import TaskRun
from governance.reviews.models import ReviewItem
from memory.models import Embedding, Learning
from sessions.models import AISession
from tests.agents.test_job_lifecycle import result
from tests.agents.test_jobs import envelope
from tests.support.processes import celery_worker, gunicorn, wait_for

DOCS = Path(__file__).resolve().parents[2] / "docs"
REMOTE = "203.0.113.7"
TOKEN = "s3cret-metrics-token-for-tests"
SQL = "/agents/agent.seo.vlevel/tools/mcp__supabase__execute_sql/calls"
SNAPSHOT = "/agents/agent.seo.vlevel/tools/mcp__chrome-devtools__take_snapshot/calls"
RANKING = "memory_retrieval_ranking"
GOOD_RANKING = {"rankings": [{"id": 3, "adjusted_score": 0.7, "rank": 1}, {"id": 5, "score": 0.2}]}
BAD_RANKING = {"rankings": [{"id": "three"}]}  # an id that is no integer, and no score: violations
LEARNING = {"story": "PD-1", "gate": 3, "domain": "seo", "project": "shop", "tags": ["#canonical"], "text": "x"}

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def series(samples: Samples, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: v for (sample, labels), v in samples.items() if sample == name}


def scrape(client, **headers: str) -> Samples:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return parse(response.content.decode())


# --- Who may read ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_remote_caller_without_a_token_is_refused_and_told_nothing(client, settings):
    settings.METRICS_TOKEN = TOKEN

    response = client.get("/metrics", REMOTE_ADDR=REMOTE)

    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"governance_" not in response.content


@pytest.mark.django_db
@pytest.mark.parametrize("authorization", [f"Bearer {TOKEN}x", "Bearer ", f"Basic {TOKEN}", TOKEN, "Bearer s3cret"])
def test_a_wrong_token_is_refused_from_anywhere(client, settings, authorization):
    settings.METRICS_TOKEN = TOKEN
    for address in (REMOTE, "127.0.0.1"):
        response = client.get("/metrics", REMOTE_ADDR=address, HTTP_AUTHORIZATION=authorization)
        assert response.status_code == 403
        assert b"governance_" not in response.content


@pytest.mark.django_db
def test_without_a_configured_token_no_remote_caller_gets_in(client, settings):
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", REMOTE_ADDR=REMOTE).status_code == 401
    assert client.get("/metrics", REMOTE_ADDR=REMOTE, HTTP_AUTHORIZATION="Bearer ").status_code == 403


@pytest.mark.django_db
def test_an_api_key_is_no_metrics_token(client, settings, vlevel, admin_operator):
    """Neither an agent's key nor an operator's: only METRICS_TOKEN opens /metrics."""
    from tests.support.keys import issue_key

    settings.METRICS_TOKEN = TOKEN
    for key in (issue_key(agent=vlevel), issue_key(user=admin_operator)):
        for address in (REMOTE, "127.0.0.1"):
            response = client.get("/metrics", REMOTE_ADDR=address, HTTP_AUTHORIZATION=f"Bearer {key}")
            assert response.status_code == 403


@pytest.mark.django_db
@pytest.mark.parametrize("behind_proxy", [True, False])
@pytest.mark.parametrize(
    "header",
    [
        {"HTTP_X_FORWARDED_FOR": REMOTE},
        {"HTTP_X_FORWARDED_FOR": "127.0.0.1"},  # forged or not, a forwarded request came through something
        {"HTTP_FORWARDED": f"for={REMOTE}"},
        {"HTTP_X_REAL_IP": REMOTE},
    ],
)
def test_a_request_a_proxy_on_this_host_forwarded_is_not_loopback(client, settings, behind_proxy, header):
    settings.BEHIND_PROXY = behind_proxy
    settings.METRICS_TOKEN = TOKEN

    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1", **header).status_code == 401
    assert client.get("/metrics", REMOTE_ADDR="::1", **header).status_code == 401
    forwarded_with_token = client.get(
        "/metrics", REMOTE_ADDR="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **header
    )
    assert forwarded_with_token.status_code == 200


@pytest.mark.django_db
def test_loopback_reads_without_a_token_and_a_remote_caller_with_it(client, settings):
    settings.METRICS_TOKEN = TOKEN
    assert "governance_heartbeat_age_seconds" in {name for name, _ in scrape(client, REMOTE_ADDR="127.0.0.1")}
    assert scrape(client, REMOTE_ADDR="::1")
    assert scrape(client, REMOTE_ADDR=REMOTE, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")


@pytest.mark.django_db
def test_metrics_is_read_only_outside_the_api_and_never_redirected_to_https(client, settings):
    from controlplane.api import api

    assert not [path for path in api.get_openapi_schema()["paths"] if "metrics" in path.split("/")]
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/accounts/login/", REMOTE_ADDR="127.0.0.1").status_code == 301
    assert client.post("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 405


# --- The figures are the database's --------------------------------------------------------------


@pytest.mark.django_db
def test_after_real_work_the_figures_match_the_database(
    client, vlevel_api, catalog, django_capture_on_commit_callbacks
):
    before = scrape(client)
    with django_capture_on_commit_callbacks(execute=True):
        jobs = [vlevel_api.post("/jobs", envelope(idempotencyKey=f"k{i}")).json()["jobId"] for i in range(3)]
        assert vlevel_api.post(f"/jobs/{jobs[0]}/result", result()).status_code == 200
        assert vlevel_api.post(f"/jobs/{jobs[1]}/lease", {"owner": "w"}).status_code == 200

        for _ in range(2):
            assert vlevel_api.post(SQL, {"permission": "read"}).status_code == 201
        assert vlevel_api.post(SQL, {"permission": "write"}).status_code == 403
        assert vlevel_api.post(SNAPSHOT, {}).status_code == 202  # waits for a reviewer: an inbox item

        chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "metrics"}).json()["sessionId"]
        first_event = AISession.objects.get(pk=chat).last_event_time
        for event in (
            {"type": "UserMessageSent", "payload": {"text": "hello"}},
            {
                "type": "AIResponseReceived",
                "payload": {"content": json.dumps({"preText": "Hi."}), "tokens": {"input": 1}},
            },
        ):
            assert vlevel_api.post(f"/sessions/{chat}/events", event).status_code == 200
        assert vlevel_api.post("/sessions", {"type": "AUTOMATION", "name": "queued"}).status_code == 201

        assert vlevel_api.post(f"/contracts/{RANKING}/validate", {"output": GOOD_RANKING}).status_code == 200
        assert vlevel_api.post(f"/contracts/{RANKING}/validate", {"output": {"rankings": "no"}}).status_code == 200
        for story in ("PD-1", "PD-2"):
            assert vlevel_api.post("/memory/learnings", {**LEARNING, "story": story}).status_code == 201
    after = scrape(client)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    agent = "agent.seo.vlevel"
    open_jobs = Job.objects.filter(status__in=["queued", "running"]).values_list("agent__agent_id", "status")
    assert series(after, "governance_jobs") == {
        (("agent", a), ("status", s)): n for (a, s), n in _counts(open_jobs).items()
    }
    assert value(after, "governance_jobs", agent=agent, status="queued") == 1
    assert (
        grew("governance_jobs_finished_total", agent=agent, status="succeeded")
        == Job.objects.filter(status="succeeded").count()
        == 1
    )

    assert grew("governance_tool_calls_total", agent=agent) == ToolCall.objects.count() == 2
    assert grew("governance_tool_refusals_total", reason="Forbidden") == 1
    assert grew("governance_tool_refusals_total", reason="PendingApproval") == 1

    not_completed = AISession.objects.exclude(phase="COMPLETED").values_list("phase", "is_active")
    assert series(after, "governance_sessions") == {
        (("active", "true" if active else "false"), ("phase", phase)): n
        for (phase, active), n in _counts(not_completed).items()
    }
    # The time in each phase adds up to the time between the chat's first and last events.
    spent = sum(
        v - before.get((name, labels), 0.0)
        for (name, labels), v in after.items()
        if name == "governance_session_phase_seconds_sum"
    )
    elapsed = (AISession.objects.get(pk=chat).last_event_time - first_event).total_seconds()
    assert spent == pytest.approx(elapsed, abs=1e-3)
    assert elapsed > 0

    now = timezone.now()
    for kind, n in _counts(ReviewItem.objects.filter(status="pending").values_list("kind")).items():
        assert value(after, "governance_inbox_pending", kind=kind[0]) == n
        oldest = ReviewItem.objects.filter(status="pending", kind=kind[0]).order_by("created_at").first()
        age = value(after, "governance_inbox_oldest_pending_age_seconds", kind=kind[0])
        assert age == pytest.approx((now - oldest.created_at).total_seconds(), abs=5)
    assert series(after, "governance_inbox_pending")  # the snapshot approval waits

    checks = ContractCheck.objects.filter(contract_name=RANKING)
    assert grew("governance_contract_checks_total", contract=RANKING) == checks.count() == 2
    assert grew("governance_contract_violations_total", contract=RANKING) == checks.filter(compliant=False).count() == 1

    for scope in Learning.Scope.values:
        assert value(after, "governance_learnings", scope=scope) == Learning.objects.filter(scope=scope).count()
    waiting = Learning.objects.count() - Embedding.objects.filter(kind="learning").count()
    assert value(after, "governance_embedding_backlog", kind="learning") == waiting == 2

    open_alerts = KpiAlert.objects.filter(resolved_at__isnull=True).values_list("agent__agent_id", "metric_id")
    assert series(after, "governance_kpi_critical") == {(("agent", a), ("metric", m)): 1 for a, m in open_alerts}
    assert math.isinf(value(after, "governance_heartbeat_age_seconds"))  # no worker ever beat here

    assert grew("governance_http_requests_total", route="api/v1/jobs", method="POST", status="2xx") == 3
    assert grew("governance_http_request_duration_seconds_count", route="api/v1/jobs", method="POST") == 3
    assert grew("governance_http_requests_total", route="metrics", method="GET", status="2xx") == 1


def _counts(rows) -> dict[tuple, int]:
    counts: dict[tuple, int] = {}
    for row in rows:
        counts[tuple(row)] = counts.get(tuple(row), 0) + 1
    return counts


@pytest.mark.django_db
def test_a_route_is_labelled_by_its_pattern_never_its_path(client, vlevel_api):
    for job_id in ("00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"):
        assert vlevel_api.get(f"/jobs/{job_id}").status_code == 404
    client.get("/no/such/page/12345")
    routes = {dict(labels)["route"] for labels in series(scrape(client), "governance_http_requests_total")}

    assert "api/v1/jobs/<job_id>" in routes
    assert "<unmatched>" in routes
    assert not [route for route in routes if "0000" in route or "12345" in route]


# --- Every process adds up -----------------------------------------------------------------------


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read().decode()


@pytest.mark.process
def test_two_gunicorn_workers_add_up_and_a_dead_one_still_counts(transactional_db, tmp_path):
    requests = 40
    with gunicorn(tmp_path, workers=2, threads=4, options=("--config", "python:controlplane.gunicorn_conf")) as base:
        with ThreadPoolExecutor(8) as pool:
            pages = list(pool.map(lambda _: _get(f"{base}/accounts/login/"), range(requests)))
        assert len(pages) == requests
        folder = tmp_path / "var" / "metrics"
        workers = {int(re.search(r"_(\d+)\.db$", p.name)[1]) for p in folder.glob("counter_*.db")}
        assert len(workers) == 2  # both workers answered, each into its own file

        samples = parse(_get(f"{base}/metrics"))
        login = {"route": "accounts/login/", "method": "GET"}
        assert value(samples, "governance_http_requests_total", **login, status="2xx") == requests
        assert value(samples, "governance_http_request_duration_seconds_count", **login) == requests

        victim = workers.pop()
        os.kill(victim, signal.SIGKILL)  # gunicorn starts another; child_exit drops its live gauges
        assert wait_for(lambda: not list(folder.glob(f"gauge_livesum_{victim}.db")), timeout=30)
        samples = parse(_get(f"{base}/metrics"))
        assert value(samples, "governance_http_requests_total", **login, status="2xx") == requests
        in_progress = series(samples, "governance_http_requests_in_progress")
        assert sum(in_progress.values()) == 1  # this scrape only
    assert "Traceback" not in (tmp_path / "gunicorn.log").read_text()  # the hook never troubled the master


@pytest.mark.process
def test_a_celery_task_run_is_counted_and_timed_by_the_worker_that_ran_it(transactional_db, tmp_path, client, settings):
    from governance.tasks import heartbeat

    with celery_worker(tmp_path, wait_ready=True):
        heartbeat.delay()
        assert wait_for(lambda: TaskRun.objects.filter(task_name="governance.heartbeat", status="success").exists(), 60)
        settings.METRICS_DIR = tmp_path / "var" / "metrics"  # the worker's folder, as one host shares it
        samples = wait_for(
            lambda: (
                (s := scrape(client))
                and value(s, "governance_celery_task_runs_total", task="governance.heartbeat", state="success")
                and s
            ),
            timeout=10,
        )

    run = TaskRun.objects.get(task_name="governance.heartbeat")
    assert value(samples, "governance_celery_task_runs_total", task="governance.heartbeat", state="success") == 1
    assert value(samples, "governance_celery_task_duration_seconds_count", task="governance.heartbeat") == 1
    took = value(samples, "governance_celery_task_duration_seconds_sum", task="governance.heartbeat")
    assert 0 < took <= (run.finished_at - run.started_at).total_seconds() + 0.05
    assert value(samples, "governance_celery_tasks_in_progress", task="governance.heartbeat") == 0
    assert 0 <= value(samples, "governance_heartbeat_age_seconds") < 60


@pytest.mark.process
def test_a_worker_only_host_serves_its_task_figures_on_metrics_port(transactional_db, tmp_path):
    """`serve --role worker` with METRICS_PORT: no web server on the host, yet Prometheus reads
    its task runs, under the same access rule as /metrics."""
    import subprocess

    from governance.tasks import heartbeat
    from tests.support.processes import BASE_DIR, PYTHON, database_url_of_tests, free_port, process_env, sending_to

    port = free_port()
    child_env = process_env(
        tmp_path / "var",
        DATABASE_URL=database_url_of_tests(),
        METRICS_PORT=str(port),
        METRICS_TOKEN=TOKEN,
        HOST="127.0.0.1",
        EMBEDDING_BACKEND="hashing",
        DEBUG="1",
    )
    base = f"http://127.0.0.1:{port}"

    def get(path: str, **headers: str) -> tuple[int, str]:
        request = urllib.request.Request(base + path, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except OSError:
            return 0, ""

    log = tmp_path / "serve.log"
    serve = subprocess.Popen(
        [PYTHON, "manage.py", "serve", "--role", "worker"],
        cwd=BASE_DIR,
        env=child_env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        with sending_to(child_env["CELERY_QUEUE"], child_env["CELERY_BROKER_URL"]):
            assert wait_for(lambda: get("/metrics")[0] == 200, 90), log.read_text()[-3000:]
            heartbeat.delay()
            ran = 'governance_celery_task_runs_total{state="success",task="governance.heartbeat"} 1.0'
            assert wait_for(lambda: ran in get("/metrics")[1], 60), log.read_text()[-3000:]
        assert get("/metrics")[0] == 200
        assert "governance_heartbeat_age_seconds" not in get("/metrics")[1]  # the database's figures are the web hosts'
        assert get("/metrics", **{"X-Forwarded-For": REMOTE})[0] == 401  # forwarded: not loopback
        assert get("/metrics", Authorization="Bearer wrong")[0] == 403
        assert ran in get("/metrics", **{"X-Forwarded-For": REMOTE, "Authorization": f"Bearer {TOKEN}"})[1]
        assert get("/anything-else")[0] == 404
    finally:
        os.killpg(serve.pid, signal.SIGTERM)
        serve.wait(timeout=60)
    assert f"Metrics of this host's processes: {base}/metrics" in log.read_text()


# --- The dashboard and the alert rules read metrics that exist ----------------------------------


METRIC_NAME = re.compile(r"\bgovernance_[a-z_]+\b")


@pytest.fixture
def exported(client, vlevel_api, catalog, django_capture_on_commit_callbacks) -> set[str]:
    """Every name /metrics exports once the plane did a bit of everything (a job, a valid and a
    violating output, a tool call and a refusal, a chat, a Celery task run through Celery), with the
    sample names (_total, _bucket...) Prometheus stores."""
    from governance.tasks import heartbeat

    with django_capture_on_commit_callbacks(execute=True):
        job = vlevel_api.post("/jobs", envelope()).json()["jobId"]
        vlevel_api.post(f"/jobs/{job}/result", result())
        vlevel_api.post(f"/contracts/{RANKING}/validate", {"output": GOOD_RANKING})
        vlevel_api.post(f"/contracts/{RANKING}/validate", {"output": BAD_RANKING})
        vlevel_api.post(SQL, {"permission": "read"})
        vlevel_api.post(SQL, {"permission": "write"})
        chat = vlevel_api.post("/sessions", {"type": "CHAT", "name": "m"}).json()["sessionId"]
        vlevel_api.post(f"/sessions/{chat}/events", {"type": "UserMessageSent", "payload": {"text": "hi"}})
    heartbeat.apply()  # Celery's own signals, in this process
    names = set()
    for family in text_string_to_metric_families(client.get("/metrics").content.decode()):
        names.add(family.name)
        names.update(sample.name for sample in family.samples)
    return names


def test_the_alert_rules_parse_and_read_exported_metrics(exported):
    rules = yaml.safe_load((DOCS / "prometheus-alerts.yml").read_text())

    alerts = {rule["alert"]: rule for group in rules["groups"] for rule in group["rules"]}
    assert {"HeartbeatStale", "InboxItemOld", "KpiCritical", "EmbeddingBacklogGrowing"} <= set(alerts)
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert rule["annotations"]["summary"], name
        used = set(METRIC_NAME.findall(rule["expr"]))
        assert used <= exported, f"{name} reads {used - exported}"


def test_the_dashboard_is_grafana_json_reading_exported_metrics(exported):
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())

    assert dashboard["title"]
    assert dashboard["schemaVersion"] >= 36
    panels = dashboard["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    used = {
        name for panel in panels for target in panel.get("targets", []) for name in METRIC_NAME.findall(target["expr"])
    }
    assert used <= exported, used - exported
    families = {re.sub(r"_(total|bucket|sum|count)$", "", name) for name in used}
    assert {
        "governance_http_requests",
        "governance_http_request_duration_seconds",
        "governance_jobs",
        "governance_jobs_finished",
        "governance_sessions",
        "governance_session_phase_seconds",
        "governance_inbox_pending",
        "governance_inbox_oldest_pending_age_seconds",
        "governance_tool_calls",
        "governance_tool_refusals",
        "governance_contract_checks",
        "governance_contract_violations",
        "governance_learnings",
        "governance_embedding_backlog",
        "governance_celery_task_runs",
        "governance_celery_task_duration_seconds",
        "governance_heartbeat_age_seconds",
        "governance_kpi_critical",
    } <= families
