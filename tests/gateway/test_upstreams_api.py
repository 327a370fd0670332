"""`/api/v1/gateway/upstreams`: operators register, change, disable and remove upstream MCP servers
over REST, with the admin's permissions, checks and audit rows. Agents never do, whatever they send."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from gateway import services
from gateway.models import ToolListing, ToolPin, UpstreamServer
from governance.kernel.models import AuditEvent
from governance.kernel.principals import SYSTEM
from governance.reviews.models import ReviewItem
from tests.factories.gateway import GatewayCallFactory
from tests.factories.governance import ReviewItemFactory
from tests.support.api import Api
from tests.support.refusals import nothing_written

pytestmark = pytest.mark.django_db

UPSTREAMS = "/gateway/upstreams"
CRM = f"{UPSTREAMS}/crm"
PRIVATE = "http://10.0.0.5:8080/mcp"
TOKEN = "upstream-secret-token-value"
SUPABASE = {"supabase": {"argv": ["npx", "-y", "@supabase/mcp-server-supabase"]}}
NEW = {"name": "billing", "url": "http://10.0.0.7/mcp", "internal": True}


def crm(**fields: object) -> UpstreamServer:
    server = UpstreamServer(name="crm", url=PRIVATE, internal=True, **fields)
    return services.save_upstream(server, actor=SYSTEM, changed=["name", "url", "internal"])


def patch(api: Api, path: str, body: dict) -> Any:
    return api.send("patch", path, body)


def locs(response) -> list[list]:
    assert response.status_code == 422, response.content
    return [error["loc"] for error in response.json()["errors"]]


def gateway_audit() -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action__startswith="gateway.").order_by("pk"))


# --- Hostile callers first ---------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["agent_api", "outsider_api", "viewer_api"])
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", UPSTREAMS, NEW),
        ("patch", CRM, {"enabled": False}),
        ("patch", f"{UPSTREAMS}/nowhere", {"enabled": False}),
        ("delete", CRM, None),
        ("delete", f"{UPSTREAMS}/nowhere", None),
    ],
)
def test_agents_outsiders_and_viewers_cannot_write_and_nothing_changes(request, who, method, path, body):
    crm()
    api = request.getfixturevalue(who)

    with nothing_written():
        response = api.delete(path) if method == "delete" else api.send(method, path, body)

    assert response.status_code == 403, response.content  # before any lookup: a name tells nothing
    assert response["Content-Type"] == "application/problem+json"
    refusal = AuditEvent.objects.get(action="access.refused")
    assert refusal.target_id == f"{method.upper()} /api/v1{path}"


@pytest.mark.parametrize("who", ["agent_api", "outsider_api"])
@pytest.mark.parametrize("path", [UPSTREAMS, CRM, f"{UPSTREAMS}/nowhere"])
def test_agents_and_outsiders_cannot_read_upstreams(request, who, path, monkeypatch):
    monkeypatch.setenv("UPSTREAM_TOKEN_CRM", TOKEN)
    crm(secret_name="UPSTREAM_TOKEN_CRM")

    response = request.getfixturevalue(who).get(path)

    assert response.status_code == 403, response.content
    assert b"10.0.0.5" not in response.content
    assert b"UPSTREAM_TOKEN_CRM" not in response.content


def test_an_agent_key_is_refused_even_for_a_valid_upstream_of_its_own_choosing(agent_api):
    response = agent_api.post(UPSTREAMS, {"name": "exfil", "url": "http://10.0.0.66/mcp", "internal": True})

    assert response.status_code == 403
    assert not UpstreamServer.objects.exists()
    assert not [event for event in gateway_audit() if event.action != "access.refused"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "meta", "url": "http://169.254.169.254/latest/meta-data", "internal": True}, "url"),
        ({"name": "meta", "url": "http://[fd00:ec2::254]/", "internal": True}, "url"),
        ({"name": "lan", "url": PRIVATE}, "url"),  # a private address, not marked internal
        ({"name": "lan", "url": "ftp://10.0.0.5/mcp", "internal": True}, "url"),
        ({"name": "lan", "transport": "http"}, "url"),  # no address at all
        ({"name": "lan", "url": PRIVATE, "internal": True, "secret_name": "SECRET_KEY"}, "secret_name"),
        ({"name": "lan", "url": PRIVATE, "internal": True, "secret_name": "DATABASE_URL"}, "secret_name"),
        ({"name": "lan", "url": PRIVATE, "internal": True, "secret_name": "sk-live-abc"}, "secret_name"),
        ({"name": "shell", "transport": "stdio", "command": "sh -c 'id'"}, "command"),
        ({"name": "Bad_Name", "url": PRIVATE, "internal": True}, "name"),
        ({"name": "lan", "transport": "smtp", "url": PRIVATE}, "transport"),
        ({"name": "lan", "url": PRIVATE, "internal": True, "password": "x"}, "password"),
    ],
)
def test_what_the_admin_refuses_is_a_422_at_the_field_and_writes_nothing(admin_api, settings, body, field):
    settings.GATEWAY_STDIO_COMMANDS = SUPABASE

    with nothing_written():
        response = admin_api.post(UPSTREAMS, body)

    assert ["body", field] in locs(response)
    assert response["Content-Type"] == "application/problem+json"


def test_a_change_the_guard_refuses_is_a_422_and_the_server_stays_as_it_was(admin_api):
    crm()

    with nothing_written():
        unmarked = patch(admin_api, CRM, {"internal": False})
        metadata = patch(admin_api, CRM, {"url": "http://169.254.169.254/"})
        platform_secret = patch(admin_api, CRM, {"secret_name": "SECRET_KEY"})
        null = patch(admin_api, CRM, {"enabled": None})
        renamed = patch(admin_api, CRM, {"name": "other"})

    assert ["body", "url"] in locs(unmarked)  # the private URL is no longer allowed
    assert ["body", "url"] in locs(metadata)
    assert ["body", "secret_name"] in locs(platform_secret)
    assert ["body", "enabled"] in locs(null)
    assert ["body", "name"] in locs(renamed)  # manifests grant tools by the server's name


def test_a_taken_name_is_a_409_and_the_first_server_is_untouched(admin_api):
    crm()

    with nothing_written():
        response = admin_api.post(UPSTREAMS, {"name": "crm", "url": "http://10.0.0.99/mcp", "internal": True})

    assert response.status_code == 409, response.content
    assert "crm" in response.json()["detail"]
    assert UpstreamServer.objects.get().url == PRIVATE


def test_a_server_agents_have_called_is_not_removed_the_operator_is_told_to_disable_it(admin_api, agent):
    GatewayCallFactory(agent=agent, server=crm())

    with nothing_written():
        response = admin_api.delete(CRM)

    assert response.status_code == 409, response.content
    assert "disable" in response.json()["detail"]
    assert UpstreamServer.objects.filter(name="crm").exists()


def test_an_unknown_name_is_a_404_for_an_operator_who_may_act(admin_api, viewer_api):
    assert viewer_api.get(f"{UPSTREAMS}/nowhere").status_code == 404
    assert patch(admin_api, f"{UPSTREAMS}/nowhere", {"enabled": False}).status_code == 404
    assert admin_api.delete(f"{UPSTREAMS}/nowhere").status_code == 404


# --- What operators do -------------------------------------------------------------------------------


def test_an_admin_adds_a_server_and_the_audit_names_them_and_the_fields(admin_api, monkeypatch):
    monkeypatch.setenv("UPSTREAM_TOKEN_BILLING", TOKEN)

    response = admin_api.post(UPSTREAMS, {**NEW, "secret_name": "UPSTREAM_TOKEN_BILLING"})

    assert response.status_code == 201, response.content
    body = response.json()
    assert {key: body[key] for key in ("name", "transport", "url", "internal", "secret_name", "secret_status")} == {
        "name": "billing",
        "transport": "http",
        "url": "http://10.0.0.7/mcp",
        "internal": True,
        "secret_name": "UPSTREAM_TOKEN_BILLING",
        "secret_status": "set",
    }
    assert (body["enabled"], body["disabled_reason"], body["address"]) == (True, "", "http://10.0.0.7/mcp")
    assert TOKEN not in response.content.decode()
    (added,) = gateway_audit()
    assert (added.action, added.actor, added.target_id) == (
        "gateway.upstream_added",
        "user:alice",
        str(UpstreamServer.objects.get().pk),
    )
    assert added.data["fields"] == ["internal", "name", "secret_name", "url"]
    assert TOKEN not in json.dumps(added.data)


def test_an_admin_adds_a_stdio_server_by_the_command_name_the_deployment_allows(admin_api, settings):
    settings.GATEWAY_STDIO_COMMANDS = SUPABASE

    response = admin_api.post(UPSTREAMS, {"name": "supabase", "transport": "stdio", "command": "supabase"})

    assert response.status_code == 201, response.content
    assert response.json()["address"] == "supabase: npx -y @supabase/mcp-server-supabase"
    assert UpstreamServer.objects.get().command == "supabase"


def test_a_patch_changes_only_what_it_sends_and_audits_only_what_changed(admin_api):
    crm()

    same = patch(admin_api, CRM, {"url": PRIVATE})
    moved = patch(admin_api, CRM, {"url": "http://10.0.0.6:8080/mcp", "internal": True})

    assert same.status_code == moved.status_code == 200
    assert moved.json()["url"] == "http://10.0.0.6:8080/mcp"
    changes = [event for event in gateway_audit() if event.action == "gateway.upstream_changed"]
    assert [(event.actor, event.data["fields"]) for event in changes] == [("user:alice", ["url"])]


def test_the_result_secrets_policy_is_shown_set_and_changed(admin_api):
    added = admin_api.post(UPSTREAMS, {**NEW, "result_secrets": "block"})
    changed = patch(admin_api, f"{UPSTREAMS}/billing", {"result_secrets": "log"})
    with nothing_written():
        wrong = patch(admin_api, f"{UPSTREAMS}/billing", {"result_secrets": "ignore"})

    assert (added.json()["result_secrets"], changed.json()["result_secrets"]) == ("block", "log")
    assert ["body", "result_secrets"] in locs(wrong)
    assert gateway_audit()[-1].data["fields"] == ["result_secrets"]
    assert admin_api.post(UPSTREAMS, {**NEW, "name": "plain"}).json()["result_secrets"] == "redact"


def test_disabling_with_a_reason_and_enabling_again(admin_api):
    crm()

    disabled = patch(admin_api, CRM, {"enabled": False, "disabled_reason": "Vendor incident #42"})
    listed = admin_api.get(UPSTREAMS, {"enabled": "false"})
    enabled = patch(admin_api, CRM, {"enabled": True})

    assert (disabled.json()["enabled"], disabled.json()["disabled_reason"]) == (False, "Vendor incident #42")
    assert [item["name"] for item in listed.json()["items"]] == ["crm"]
    assert (enabled.json()["enabled"], enabled.json()["disabled_reason"]) == (True, "")
    changes = [event.data["fields"] for event in gateway_audit() if event.action == "gateway.upstream_changed"]
    assert changes == [["disabled_reason", "enabled"], ["disabled_reason", "enabled"]]


def test_a_reason_for_a_server_that_stays_enabled_is_refused(admin_api):
    crm()

    with nothing_written():
        response = patch(admin_api, CRM, {"disabled_reason": "ignored otherwise"})

    assert ["body", "disabled_reason"] in locs(response)


def test_a_server_never_called_is_removed_with_an_audit_row(admin_api):
    server = crm()

    response = admin_api.delete(CRM)

    assert response.status_code == 204, response.content
    assert not UpstreamServer.objects.exists()
    removed = gateway_audit()[-1]
    assert (removed.action, removed.actor, removed.target_id) == (
        "gateway.upstream_removed",
        "user:alice",
        str(server.pk),
    )
    assert removed.data["name"] == "crm"
    assert removed.data["address"] == PRIVATE


def test_a_server_never_called_goes_with_what_the_gateway_learned_of_its_tools(admin_api):
    server = crm()
    ToolPin.objects.create(server=server, tool="lookup", change="first", status="approved", sha256="a" * 64)
    ToolListing.objects.create(server=server, command="", tools=[{"name": "lookup"}])

    assert admin_api.delete(CRM).status_code == 204
    assert not ToolPin.objects.exists()
    assert not ToolListing.objects.exists()


def test_a_changed_definition_waiting_for_a_reviewer_is_closed_with_its_server(admin_api):
    server = crm()
    item = ReviewItemFactory.create(kind="gateway.tool_definition", title="lookup changed")
    ToolPin.objects.create(
        server=server, tool="lookup", change="changed", status="pending", sha256="b" * 64, review_item=item
    )

    assert admin_api.delete(CRM).status_code == 204
    item.refresh_from_db()
    assert item.status == ReviewItem.Status.EXPIRED
    assert "removed" in item.decision.comment


def test_a_viewer_lists_and_reads_servers_paginated_and_never_sees_a_secret_value(viewer_api, monkeypatch):
    monkeypatch.setenv("UPSTREAM_TOKEN_CRM", TOKEN)
    crm(secret_name="UPSTREAM_TOKEN_CRM")
    services.save_upstream(
        UpstreamServer(name="alpha", url="http://10.0.0.8/mcp", internal=True, secret_name="UPSTREAM_TOKEN_NONE"),
        actor=SYSTEM,
        changed=["name"],
    )

    first = viewer_api.get(UPSTREAMS, {"limit": 1})
    second = viewer_api.get(UPSTREAMS, {"limit": 1, "offset": 1})
    one = viewer_api.get(CRM)

    assert first.json()["count"] == 2
    assert [item["name"] for item in first.json()["items"] + second.json()["items"]] == ["alpha", "crm"]
    assert first.json()["items"][0]["secret_status"] == "missing"
    assert (one.status_code, one.json()["secret_status"], one.json()["secret_name"]) == (
        200,
        "set",
        "UPSTREAM_TOKEN_CRM",
    )
    for response in (first, second, one):
        assert TOKEN not in response.content.decode()


def test_the_list_filters_by_transport_and_reads_in_constant_queries(viewer_api, settings):
    settings.GATEWAY_STDIO_COMMANDS = SUPABASE
    crm()
    services.save_upstream(
        UpstreamServer(name="supabase", transport="stdio", command="supabase"), actor=SYSTEM, changed=["name"]
    )

    stdio = viewer_api.get(UPSTREAMS, {"transport": "stdio"})
    with CaptureQueriesContext(connection) as two:
        viewer_api.get(UPSTREAMS)
    for n in range(5):
        services.save_upstream(
            UpstreamServer(name=f"extra-{n}", url=f"http://10.0.1.{n}/mcp", internal=True), actor=SYSTEM, changed=[]
        )
    with CaptureQueriesContext(connection) as seven:
        listed = viewer_api.get(UPSTREAMS)

    assert [item["name"] for item in stdio.json()["items"]] == ["supabase"]
    assert listed.json()["count"] == 7
    assert len(seven) == len(two)
    assert ["query", "transport"] in locs(viewer_api.get(UPSTREAMS, {"transport": "smtp"}))
