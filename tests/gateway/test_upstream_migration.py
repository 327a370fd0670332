"""Migration 0005 on rows of an earlier release: a stdio server whose command line an Admin typed
is disabled, saying what it ran and what the operator must do; HTTP servers are left as they are."""

from __future__ import annotations

import pytest

from tests.support.migrations import back_at, migrate

BEFORE = [("gateway", "0004_tool_call_pruned")]
AFTER = [("gateway", "0005_stdio_commands_named")]


@pytest.mark.django_db(transaction=True)
def test_a_typed_command_line_is_disabled_with_a_reason_that_says_what_to_do():
    with back_at(BEFORE) as old:
        servers = old.get_model("gateway", "UpstreamServer")
        typed = servers.objects.create(name="local", transport="stdio", command="sh -c 'cat var/secret_key'")
        remote = servers.objects.create(name="remote", transport="http", url="https://mcp.example.com/mcp")

        new = migrate(AFTER)

    rows = new.get_model("gateway", "UpstreamServer").objects.in_bulk()
    assert rows[typed.pk].enabled is False
    assert "GATEWAY_STDIO_COMMANDS" in rows[typed.pk].disabled_reason
    assert "sh -c 'cat var/secret_key'" in rows[typed.pk].disabled_reason
    assert (rows[remote.pk].enabled, rows[remote.pk].disabled_reason, rows[remote.pk].internal) == (True, "", False)
    event = new.get_model("governance", "AuditEvent").objects.get(action="gateway.upstream_disabled")
    assert (event.target_id, event.data["command"]) == (str(typed.pk), "sh -c 'cat var/secret_key'")
