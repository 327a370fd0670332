"""An Admin is not root. The commands an upstream MCP server runs are named by the deployment
(``GATEWAY_STDIO_COMMANDS``), never typed into a form, and run in a Celery worker, never in a web
process; an HTTP upstream passes the outbound guard of provider profiles, when it is saved and
again when the gateway connects to it."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from mcp.client.session import ClientSession

from agents.registry import load_manifest
from gateway import services
from gateway.models import GatewayCall, UpstreamServer
from governance.kernel.principals import SYSTEM, Principal
from tests.support.keys import issue_key
from tests.support.manifests import manifest_text
from tests.support.mcp import mcp_session
from tests.support.upstream import upstream_server

ADD = "/admin/gateway/upstreamserver/add/"
SUPABASE = {"supabase": {"argv": ["npx", "-y", "@supabase/mcp-server-supabase"]}}
SQL = "mcp__supabase__execute_sql"


def form(**fields: str) -> dict[str, str]:
    posted = {"name": "evil", "transport": "stdio", "url": "", "command": "", "secret_name": "", "enabled": "on"}
    return posted | {"result_secrets": "redact"} | fields  # the select's default, as a browser sends it


def errors_of(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.status_code  # the form again
    return response.context["adminform"].form.errors


# --- Commands are the deployment's -----------------------------------------------------------------


@pytest.mark.django_db
def test_an_admin_cannot_type_a_command_line_into_the_form(client, staff_admin, settings):
    settings.GATEWAY_STDIO_COMMANDS = SUPABASE
    client.force_login(staff_admin)

    response = client.post(ADD, form(command="sh -c 'sha256sum var/secret_key'"))

    assert "command" in errors_of(response)
    assert not UpstreamServer.objects.exists()


@pytest.mark.django_db
def test_the_service_refuses_a_command_the_deployment_does_not_name(staff_admin, settings):
    settings.GATEWAY_STDIO_COMMANDS = SUPABASE
    server = UpstreamServer(name="evil", transport="stdio", command="sh -c 'id'")

    with pytest.raises(ValidationError) as refused:
        services.save_upstream(server, actor=Principal(user=staff_admin), changed=["command"])

    assert "command" in refused.value.message_dict
    assert not UpstreamServer.objects.exists()


@pytest.mark.django_db
def test_an_admin_picks_one_of_the_commands_the_deployment_names(client, staff_admin, settings):
    settings.GATEWAY_STDIO_COMMANDS = SUPABASE
    client.force_login(staff_admin)

    page = client.get(ADD).content.decode()
    response = client.post(ADD, form(name="supabase", command="supabase"))

    assert '<option value="supabase">supabase</option>' in page
    assert response.status_code == 302
    assert UpstreamServer.objects.get().command == "supabase"


@pytest.fixture
def tripwire(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Any) -> Path:
    """An allowed command, ``tripwire``, that only leaves a file behind when it starts. It is on the
    web process's PATH under its name too, where a command line typed into the old form found it."""
    started = tmp_path / "started"
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "tripwire"
    script.write_text(f"#!/bin/sh\necho $$ > '{started}'\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    settings.GATEWAY_STDIO_COMMANDS = {"tripwire": {"argv": [str(script)]}}
    UpstreamServer.objects.create(name="tripwire", transport="stdio", command="tripwire")
    return started


def never_appears(path: Path, seconds: float = 1.5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists():
            return False
        time.sleep(0.1)
    return True


@pytest.mark.django_db
def test_a_viewer_opening_the_gateway_starts_no_command_in_the_web_process(client, staff_viewer, tripwire):
    client.force_login(staff_viewer)

    response = client.get("/gateway/")

    assert response.status_code == 200
    assert "tripwire" in response.content.decode()
    assert never_appears(tripwire)


@pytest.mark.django_db(transaction=True)
def test_an_agents_tool_list_starts_no_command_in_the_web_process(live_server, tripwire):
    text = manifest_text("agent.seo.vlevel").replace(
        "  tools:\n",
        "  tools:\n    - tool_id: mcp__tripwire__anything\n      permissions: read\n      rate_limit: 5\n",
        1,
    )
    key = issue_key(agent=load_manifest(text, actor=SYSTEM)[0].agent)

    async def work(session: ClientSession) -> Any:
        return await session.list_tools()

    names = {tool.name for tool in mcp_session(live_server.url, key, work).tools}

    assert "submit_job" in names  # the list came back, without the command's tools (no worker ran it)
    assert never_appears(tripwire)


# --- HTTP upstreams pass the outbound guard -------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("internal", ["", "on"])
def test_a_cloud_metadata_address_is_refused_even_for_an_internal_server(client, staff_admin, internal):
    client.force_login(staff_admin)

    response = client.post(
        ADD, form(name="meta", transport="http", url="http://169.254.169.254/latest/meta-data/", internal=internal)
    )

    assert "url" in errors_of(response)
    assert not UpstreamServer.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/mcp", "http://10.0.0.5:8080/mcp", "https://localhost/mcp"])
def test_a_private_address_is_allowed_only_once_the_operator_marks_the_server_internal(client, staff_admin, url):
    client.force_login(staff_admin)

    refused = client.post(ADD, form(name="local", transport="http", url=url))
    assert "url" in errors_of(refused)
    accepted = client.post(ADD, form(name="local", transport="http", url=url, internal="on"))

    assert accepted.status_code == 302
    assert UpstreamServer.objects.get().internal is True


@pytest.mark.django_db(transaction=True)
def test_a_row_saved_before_the_guard_never_reaches_a_loopback_upstream(live_server):
    key = issue_key(agent=load_manifest(manifest_text("agent.seo.vlevel"), actor=SYSTEM)[0].agent)
    with upstream_server() as upstream:
        UpstreamServer.objects.create(name="supabase", url=upstream.url)  # as an older release saved it

        async def work(session: ClientSession) -> Any:
            return await session.list_tools(), await session.call_tool(SQL, {"query": "select 1"})

        listed, called = mcp_session(live_server.url, key, work)

    assert SQL not in {tool.name for tool in listed.tools}
    assert called.is_error
    assert upstream.authorizations == []  # not one request reached it
    assert GatewayCall.objects.get().refusal == "NotGranted"


@pytest.mark.django_db
def test_the_gateway_refuses_to_connect_to_a_metadata_address_a_row_names(client, staff_viewer):
    UpstreamServer.objects.create(name="meta", url="http://169.254.169.254/mcp", internal=True)
    client.force_login(staff_viewer)

    page = client.get("/gateway/").content.decode()

    assert "OutboundRefused" in page
