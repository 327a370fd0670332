"""Links in notifications use the plane's public address, NOTIFY_BASE_URL: unset, the address `serve`
was started on; in production (DEBUG off) one that names the reader's own machine is a warning of
`manage.py check --deploy` (governance.W007)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import urllib.request

import pytest
from django.core import checks

from governance.kernel.principals import Principal
from governance.notifications import services as notifications
from governance.notifications.checks import links_open_for_their_readers
from governance.notifications.models import Delivery, EventKind, NotificationRule
from tests.factories.agents import AgentFactory
from tests.support.keys import issue_key
from tests.support.processes import (
    BASE_DIR,
    PYTHON,
    database_url_of_tests,
    free_port,
    logged_process,
    process_env,
    wait_for,
)


@pytest.mark.parametrize(
    ("base", "problem"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1 is a loopback address: the reader's own machine"),
        ("http://localhost:8000", "localhost is the reader's own machine"),
        ("http://[::1]:8000", "::1 is a loopback address: the reader's own machine"),
        ("http://0.0.0.0:8000", "0.0.0.0 is where a server listens, not an address to open"),
        ("", "it names no host"),
    ],
)
def test_a_loopback_address_in_production_is_a_warning(settings, base, problem):
    settings.DEBUG, settings.NOTIFY_BASE_URL = False, base

    (warning,) = links_open_for_their_readers(None)

    assert warning.id == "governance.W007"
    assert warning.msg == (
        f"NOTIFY_BASE_URL is {base!r}: {problem}, so the links in notifications open nothing for those who read them."
    )


@pytest.mark.parametrize("base", ["https://ops.example.com", "http://10.0.0.7:8000", "https://governance.internal"])
def test_an_address_others_can_open_passes(settings, base):
    settings.DEBUG, settings.NOTIFY_BASE_URL = False, base

    assert links_open_for_their_readers(None) == []


def test_a_loopback_address_is_fine_while_debugging(settings):
    settings.DEBUG, settings.NOTIFY_BASE_URL = True, "http://127.0.0.1:8000"

    assert links_open_for_their_readers(None) == []


def test_the_check_runs_with_the_deploy_checks_only():
    """Registered when the app loads (not only when a test imports it), and left out of a plain
    `check`, which `make run`'s migrate runs on every local start."""
    assert links_open_for_their_readers in checks.registry.registry.get_checks(include_deployment_checks=True)
    assert links_open_for_their_readers not in checks.registry.registry.get_checks(include_deployment_checks=False)


def _setting_in_a_process(tmp_path, **environment: str) -> str:
    child = process_env(tmp_path, **environment)
    child.pop("NOTIFY_BASE_URL", None)
    child.update(environment)
    code = "import django; django.setup(); from django.conf import settings; print(settings.NOTIFY_BASE_URL)"
    done = subprocess.run([PYTHON, "-c", code], cwd=BASE_DIR, env=child, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_unset_it_is_the_address_serve_listens_on_and_set_it_is_taken_as_it_is(tmp_path):
    assert _setting_in_a_process(tmp_path) == "http://127.0.0.1:8000"
    assert _setting_in_a_process(tmp_path, HOST="10.0.0.7", PORT="9000") == "http://10.0.0.7:9000"
    assert _setting_in_a_process(tmp_path, NOTIFY_BASE_URL="https://ops.example.com/") == "https://ops.example.com"


@pytest.mark.django_db(transaction=True)
def test_serve_started_on_another_port_links_there(tmp_path, admin_operator):
    """`serve --role web --port N` (a flag, not PORT): an approval an agent asks for over HTTP is
    announced by the web process with links to port N."""
    agent = AgentFactory(agent_id="agent.seo.vlevel", domain="seo")
    key = issue_key(agent=agent)
    notifications.save_rule(
        NotificationRule(
            name="reviewers",
            events=[EventKind.INBOX_TOOL_APPROVAL],
            channel="signed_webhook",
            target="https://93.184.216.34/x",
        ),
        actor=Principal(user=admin_operator),
        changed=[],
    )
    port = free_port()
    child = process_env(tmp_path, DATABASE_URL=database_url_of_tests(), WEB_CONCURRENCY="1")
    child.pop("NOTIFY_BASE_URL", None)
    command = [PYTHON, "manage.py", "serve", "--role", "web", "--port", str(port)]

    with logged_process(command, child, tmp_path / "serve.log") as serve:
        try:
            log = tmp_path / "serve.log"
            assert wait_for(lambda: "Control plane ready" in log.read_text(), timeout=180), log.read_text()
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/api/v1/approvals",
                data=json.dumps({"action": "Refund order O-17"}).encode(),
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                item = json.loads(response.read())["reviewItemId"]
        finally:
            os.killpg(serve.pid, signal.SIGINT)
            serve.wait(timeout=90)

    (delivery,) = Delivery.objects.all()
    assert delivery.payload["link"] == f"http://127.0.0.1:{port}/inbox/items/{item}/"
