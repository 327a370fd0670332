"""`manage.py upstreams`: the admin's upstream registration from a shell, with the same checks
and audit rows; a server is removed only when agents never called it."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from gateway.models import UpstreamServer
from governance.kernel.models import AuditEvent
from tests.factories.gateway import GatewayCallFactory

pytestmark = pytest.mark.django_db

PRIVATE = "http://10.0.0.5:8080/mcp"


def upstreams(*args: str) -> str:
    out = io.StringIO()
    call_command("upstreams", *args, stdout=out)
    return out.getvalue()


def test_adding_a_private_server_saves_it_and_audits_the_system_and_its_fields(monkeypatch):
    monkeypatch.setenv("UPSTREAM_TOKEN_SUPABASE", "upstream-secret-token")

    said = upstreams("add", "supabase", "--url", PRIVATE, "--internal", "--secret-name", "UPSTREAM_TOKEN_SUPABASE")

    server = UpstreamServer.objects.get()
    assert (server.name, server.url, server.internal, server.enabled) == ("supabase", PRIVATE, True, True)
    assert said == "supabase: added\n"
    event = AuditEvent.objects.get(action="gateway.upstream_added")
    assert event.actor == "system"
    assert event.data["fields"] == ["internal", "secret_name", "url"]
    assert "upstream-secret-token" not in str(event.data)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--url", PRIVATE], "url"),  # a private address without --internal
        (["--url", "http://169.254.169.254/latest/meta-data", "--internal"], "url"),  # cloud metadata, ever
        (["--url", PRIVATE, "--internal", "--secret-name", "SECRET_KEY"], "secret_name"),  # the platform's own
        (["--transport", "stdio", "--command", "rm -rf /"], "command"),  # a command line, not an allowed name
    ],
)
def test_what_the_admin_refuses_the_command_refuses_and_writes_nothing(args, field):
    with pytest.raises(CommandError, match=field):
        upstreams("add", "supabase", *args)

    assert not UpstreamServer.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="gateway.").exists()


def test_change_disable_and_enable_audit_only_what_changed_and_list_says_so():
    upstreams("add", "supabase", "--url", PRIVATE, "--internal")

    assert upstreams("change", "supabase", "--url", PRIVATE) == "supabase: nothing to change.\n"
    upstreams("change", "supabase", "--url", "http://10.0.0.6:8080/mcp")
    upstreams("disable", "supabase")
    listed = upstreams("list")

    server = UpstreamServer.objects.get()
    assert (server.url, server.enabled) == ("http://10.0.0.6:8080/mcp", False)
    changes = AuditEvent.objects.filter(action="gateway.upstream_changed").order_by("at", "pk")
    assert [event.data["fields"] for event in changes] == [["url"], ["enabled"]]
    assert listed == "supabase\thttp\thttp://10.0.0.6:8080/mcp\tdisabled (by an operator)\n"

    upstreams("enable", "supabase")

    assert UpstreamServer.objects.get().enabled


def test_adding_a_taken_name_or_changing_an_unknown_one_is_refused():
    upstreams("add", "supabase", "--url", PRIVATE, "--internal")

    with pytest.raises(CommandError, match="exists already"):
        upstreams("add", "supabase", "--url", "http://10.0.0.9/mcp", "--internal")
    with pytest.raises(CommandError, match="No upstream server 'nowhere'"):
        upstreams("disable", "nowhere")
    assert UpstreamServer.objects.get().url == PRIVATE


def test_a_server_never_called_is_removed_and_the_removal_audited():
    upstreams("add", "supabase", "--url", PRIVATE, "--internal")
    server_id = UpstreamServer.objects.get().pk

    said = upstreams("remove", "supabase")

    assert said == "supabase: removed\n"
    assert not UpstreamServer.objects.exists()
    event = AuditEvent.objects.get(action="gateway.upstream_removed")
    assert (event.actor, event.target_id, event.data["name"]) == ("system", str(server_id), "supabase")


def test_a_server_agents_called_is_kept_and_the_operator_told_to_disable_it(agent):
    upstreams("add", "supabase", "--url", PRIVATE, "--internal")
    GatewayCallFactory(agent=agent, server=UpstreamServer.objects.get())

    with pytest.raises(CommandError, match="Disable it instead"):
        upstreams("remove", "supabase")
    with pytest.raises(CommandError, match="No upstream server 'nowhere'"):
        upstreams("remove", "nowhere")

    assert UpstreamServer.objects.filter(name="supabase").exists()
    assert not AuditEvent.objects.filter(action="gateway.upstream_removed").exists()


def test_the_result_secrets_policy_is_set_and_changed_from_the_shell():
    upstreams("add", "supabase", "--url", PRIVATE, "--internal", "--result-secrets", "block")
    upstreams("change", "supabase", "--result-secrets", "log")

    assert UpstreamServer.objects.get().result_secrets == "log"
    changed = AuditEvent.objects.get(action="gateway.upstream_changed")
    assert changed.data["fields"] == ["result_secrets"]
