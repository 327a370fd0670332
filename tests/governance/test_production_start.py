"""The production path (README, "Production start"): `manage.py migrate` once, then
`manage.py serve --role all --no-demo`. On a fresh database it comes up ready and writes no demo
row, makes no account, saves no credentials file and prints no password or key."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.processes import BASE_DIR, free_port, plane_env, serving_plane

pytestmark = pytest.mark.process

# Every model a demo loader (agents, sessions, memory, governance/contracts) writes, and the accounts.
COUNTED = """
import json
from django.contrib.auth import get_user_model
from agents.models import Agent, Job, JobTrigger, KpiSample
from governance.contracts.models import Contract, ContractCheck
from governance.kernel.models import ApiKey
from memory.models import Learning, Subject
from sessions.models import AISession, Automation, ProviderProfile
models = [get_user_model(), ApiKey, Agent, Job, JobTrigger, KpiSample, Contract, ContractCheck, Learning, Subject,
          AISession, Automation, ProviderProfile]
print(json.dumps({model.__name__: model.objects.count() for model in models}))
"""


def test_migrate_then_serve_no_demo_writes_no_demo_row_account_or_secret(tmp_path):
    port = free_port()
    child_env = plane_env(tmp_path, port)
    manage = [sys.executable, "manage.py"]
    migrated = subprocess.run([*manage, "migrate", "--noinput"], cwd=BASE_DIR, env=child_env, capture_output=True)
    assert migrated.returncode == 0, migrated.stderr.decode()[-3000:]

    log_path = tmp_path / "serve.log"
    with serving_plane(child_env, log_path):
        counted = subprocess.run(
            [*manage, "shell", "-c", COUNTED], cwd=BASE_DIR, env=child_env, capture_output=True, text=True
        )
        assert counted.returncode == 0, counted.stderr[-3000:]

    counts = json.loads(counted.stdout.strip().splitlines()[-1])
    assert counts == dict.fromkeys(counts, 0)
    assert not (tmp_path / "var" / "demo-credentials.txt").exists()
    output = migrated.stdout.decode() + log_path.read_text()
    for leak in ("Demo account", "Demo agent key", "Demo operator key", "Demo credentials", "password", "gov_"):
        assert leak not in output, leak
