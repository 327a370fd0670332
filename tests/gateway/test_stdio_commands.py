"""GATEWAY_STDIO_COMMANDS: the commands a deployment allows, as whoever deploys writes them; a bad
entry is named by `manage.py check` (gateway.E001) and never offered to an Admin."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from gateway import commands
from gateway.models import stdio_commands

GOOD = {"supabase": {"argv": ["npx", "-y", "@supabase/mcp-server-supabase"], "env": ["SUPABASE_ACCESS_TOKEN"]}}


def test_a_command_is_its_program_arguments_and_the_variables_it_gets():
    assert commands.problems(GOOD) == []
    assert commands.allowed(GOOD) == {
        "supabase": commands.StdioCommand(
            "supabase", ("npx", "-y", "@supabase/mcp-server-supabase"), ("SUPABASE_ACCESS_TOKEN",)
        )
    }


@pytest.mark.parametrize(
    ("document", "named"),
    [
        (["npx"], "GATEWAY_STDIO_COMMANDS: a JSON object"),
        ({"Supabase Prod": {"argv": ["npx"]}}, "'Supabase Prod']: a name"),
        ({"supabase": "npx -y @supabase/mcp-server-supabase"}, "['supabase']: an object"),
        ({"supabase": {"argv": []}}, "['supabase'].argv"),
        ({"supabase": {"argv": "npx -y server"}}, "['supabase'].argv"),
        ({"supabase": {"argv": ["npx"], "env": ["NOT A NAME"]}}, "['supabase'].env"),
        ({"supabase": {"argv": ["npx"], "shell": True}}, "unknown key 'shell'"),
    ],
)
def test_each_bad_entry_is_named_and_left_out(document, named):
    problems = commands.problems(document)

    assert len(problems) == 1
    assert named in problems[0]
    assert commands.allowed(document) == {}


@pytest.mark.django_db
def test_a_bad_entry_stops_the_system_check(settings):
    settings.GATEWAY_STDIO_COMMANDS = {**GOOD, "broken": {"argv": []}}

    with pytest.raises(SystemCheckError, match=r"gateway\.E001.*'broken'\]\.argv"):
        call_command("check")
    assert list(stdio_commands()) == ["supabase"]  # the good one still runs
