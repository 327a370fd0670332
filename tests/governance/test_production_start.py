"""The production path (README, "Production start"), run as written on a fresh database:
`migrate`, `createsuperuser`, `create_api_key --user`, `serve --role all --no-demo`; then the
seed's example manifest uploaded with the operator key, an agent key from `create_api_key
--agent`, and a job that agent submits and leases. The start loads the contract catalog (and the
roles, schedules and skills migrate seeds), the empty fleet page says how to add an agent, and
no demo row, account, credentials file or secret appears anywhere."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import httpx
import pytest

from tests.support.processes import BASE_DIR, free_port, plane_env, serving_plane

pytestmark = pytest.mark.process

OPERATOR, PASSWORD = "ops", "a-long-operator-passphrase-7"
EXAMPLE = BASE_DIR / "agents" / "manifests" / "agent.seo.vlevel.yaml"
HOWTO = "How to add an agent"
DEMO_AGENTS = ("agent.rag.indexer", "agent.seo.architect")

# What the plane holds: the demo loaders' models (agents, sessions, memory, governance/contracts),
# the accounts and keys, and what a production start must have made.
COUNTED = """
import json
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django_celery_beat.models import PeriodicTask
from agents.models import Agent, Job, JobTrigger, KpiSample, Skill
from governance.contracts.models import Contract, ContractCheck
from governance.kernel.models import ApiKey
from memory.models import Learning, Subject
from sessions.models import AISession, Automation, ProviderProfile
demo = [JobTrigger, KpiSample, ContractCheck, Learning, Subject, AISession, Automation, ProviderProfile]
print(json.dumps({
    "demo rows": {model.__name__: model.objects.count() for model in demo},
    "users": sorted(get_user_model().objects.values_list("username", flat=True)),
    "keys": sorted(ApiKey.objects.values_list("name", flat=True)),
    "agents": sorted(Agent.objects.values_list("agent_id", flat=True)),
    "jobs": list(Job.objects.values_list("status", flat=True)),
    "contracts": Contract.objects.filter(is_current=True).count(),
    "groups": sorted(Group.objects.filter(permissions__isnull=False).distinct().values_list("name", flat=True)),
    "schedules": sorted(PeriodicTask.objects.values_list("name", flat=True)),
    "skills": Skill.objects.count(),
}))
"""


def _manage(child_env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=BASE_DIR, env=child_env, capture_output=True, text=True
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)}: {done.stderr[-3000:]}"
    return done


def _sign_in(browser: httpx.Client) -> None:
    """The login form, as a browser posts it (CSRF cookie and token)."""
    form = browser.get("/accounts/login/")
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text)
    assert found, form.text[-2000:]
    token = found.group(1)
    signed_in = browser.post(
        "/accounts/login/",
        data={"username": OPERATOR, "password": PASSWORD, "csrfmiddlewaretoken": token, "next": "/agents/"},
    )
    assert signed_in.status_code == 302, signed_in.text[-2000:]


def test_the_documented_production_start_ends_in_an_agent_leasing_its_job(tmp_path):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    child_env = plane_env(tmp_path, port, DJANGO_SUPERUSER_PASSWORD=PASSWORD)
    migrated = _manage(child_env, "migrate", "--noinput")
    _manage(child_env, "createsuperuser", "--noinput", "--username", OPERATOR, "--email", "ops@example.com")
    operator_key = _manage(child_env, "create_api_key", "--user", OPERATOR, "--name", "deploy").stdout.strip()

    log_path = tmp_path / "serve.log"
    with serving_plane(child_env, log_path), httpx.Client(base_url=base, timeout=60) as browser:
        _sign_in(browser)
        empty_fleet = browser.get("/agents/")
        example_link = re.search(r'<a href="([^"]+)"[^>]*>[^<]*example manifest', empty_fleet.text).group(1)
        example = browser.get(example_link)

        uploaded = httpx.put(
            f"{base}/api/v1/agents/agent.seo.vlevel/manifest",
            content=EXAMPLE.read_bytes(),
            headers={"Authorization": f"Bearer {operator_key}", "Content-Type": "application/yaml"},
            timeout=60,
        )
        fleet = browser.get("/agents/")
        agent_key = _manage(child_env, "create_api_key", "--agent", "agent.seo.vlevel", "--name", "worker").stdout
        agent = {"Authorization": f"Bearer {agent_key.strip()}"}
        submitted = httpx.post(
            f"{base}/api/v1/jobs",
            headers=agent,
            json={
                "intent": "seo_audit",
                "scope": {"entityType": "page"},
                "payload": {"urls": ["https://example.com"]},
                "context": {"source": "manual"},
            },
            timeout=60,
        )
        job_id = submitted.json()["jobId"]
        leased = httpx.post(f"{base}/api/v1/jobs/{job_id}/lease", headers=agent, timeout=60)
        counted = _manage(child_env, "shell", "-c", COUNTED)

    assert empty_fleet.status_code == 200
    assert HOWTO in empty_fleet.text
    assert "manage.py load_manifest" in empty_fleet.text
    assert f"{base}/api/v1/agents/agent.seo.vlevel/manifest" in empty_fleet.text
    assert (example.status_code, example.content) == (200, EXAMPLE.read_bytes())
    assert uploaded.status_code == 201, uploaded.text
    assert "<code>agent.seo.vlevel</code>" in fleet.text
    assert HOWTO not in fleet.text
    assert submitted.status_code == 201, submitted.text
    assert leased.status_code == 200, leased.text
    assert leased.json()["status"] == "running"
    assert leased.json()["lease"]["owner"]

    plane = json.loads(counted.stdout.strip().splitlines()[-1])
    assert plane["contracts"] == 70
    assert plane["groups"] == ["Admin", "Reviewer", "Viewer"]
    assert {"heartbeat", "session scheduler tick", "review expiry", "retention"} <= set(plane["schedules"])
    assert plane["skills"] > 0
    assert plane["users"] == [OPERATOR]
    assert plane["keys"] == ["deploy", "worker"]
    assert plane["agents"] == ["agent.seo.vlevel"]
    assert plane["jobs"] == ["running"]
    assert plane["demo rows"] == dict.fromkeys(plane["demo rows"], 0)

    output = migrated.stdout + log_path.read_text()
    assert "Contract catalog: 70 shipped contract(s), 70 added" in output
    assert not (tmp_path / "var" / "demo-credentials.txt").exists()
    for leak in ("Demo account", "Demo agent key", "Demo operator key", "Demo credentials", PASSWORD, "gov_"):
        assert leak not in output, leak
    assert not any(agent_id in output for agent_id in DEMO_AGENTS)
