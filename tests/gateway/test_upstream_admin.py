"""Operators register upstream servers in the admin: checked, audited, never deleted while the
call log points at them; the credential is a variable's name, and the platform's own are refused.
(What an Admin may not make the server run or reach: tests/adversarial/test_gateway_upstreams.py.)"""

from __future__ import annotations

import pytest

from gateway.models import UpstreamServer
from governance.kernel.models import AuditEvent

pytestmark = pytest.mark.django_db

ADD = "/admin/gateway/upstreamserver/add/"


def form(**fields: str) -> dict[str, str]:
    """A server on the operator's private network (so marked internal)."""
    url = "http://10.0.0.5:8080/mcp"
    return {
        "name": "supabase",
        "transport": "http",
        "url": url,
        "internal": "on",
        "command": "",
        "result_secrets": "redact",  # the select's default, as a browser sends it
        **fields,
    }


def test_an_admin_registers_an_http_upstream_and_the_audit_says_who(client, staff_admin, monkeypatch):
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", "upstream-secret-token")
    client.force_login(staff_admin)

    response = client.post(ADD, form(secret_name="UPSTREAM_TOKEN_SUPABASE", enabled="on"))
    listing = client.get("/admin/gateway/upstreamserver/")

    assert response.status_code == 302, response.content
    server = UpstreamServer.objects.get()
    assert (server.name, server.secret_name, server.secret_status) == ("supabase", "UPSTREAM_TOKEN_SUPABASE", "set")
    event = AuditEvent.objects.get(action="gateway.upstream_added")
    assert event.actor == f"user:{staff_admin.username}"
    assert "upstream-secret-token" not in listing.content.decode()
    assert "upstream-secret-token" not in str(event.data)


@pytest.mark.parametrize("secret_name", ["SECRET_KEY", "DATABASE_URL", "sk-live-123", "TOKEN_FILE"])
def test_a_credential_name_is_a_variable_and_never_the_platforms_own(client, staff_admin, secret_name):
    client.force_login(staff_admin)

    response = client.post(ADD, form(secret_name=secret_name, enabled="on"))

    assert response.status_code == 200  # the form again, with the error
    assert "secret_name" in response.context["adminform"].form.errors
    assert not UpstreamServer.objects.exists()


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"url": ""}, "url"),
        ({"transport": "stdio", "url": ""}, "command"),
        ({"transport": "stdio", "command": "'"}, "command"),
    ],
)
def test_each_transport_needs_its_address(client, staff_admin, fields, field):
    client.force_login(staff_admin)

    response = client.post(ADD, form(**fields))

    assert field in response.context["adminform"].form.errors
    assert not UpstreamServer.objects.exists()


def test_a_viewer_sees_upstreams_but_registers_none_and_nobody_deletes_one(client, staff_viewer, staff_admin):
    server = UpstreamServer.objects.create(name="supabase", url="http://10.0.0.5:8080/mcp")
    client.force_login(staff_viewer)

    assert client.get("/admin/gateway/upstreamserver/").status_code == 200
    assert client.post(ADD, form(name="other")).status_code == 403
    client.force_login(staff_admin)
    assert client.post(f"/admin/gateway/upstreamserver/{server.pk}/delete/", {"post": "yes"}).status_code == 403
    assert UpstreamServer.objects.count() == 1
