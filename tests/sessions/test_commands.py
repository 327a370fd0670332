"""DataCommand ids, the CommandTransformer and period resolution (pure: no database)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from sessions.commands import (
    DataCommand,
    ExecutableCommand,
    command_result,
    is_delegated,
    make_command,
    system_message,
    transform,
)
from sessions.periods import Calendar, RelativePeriod, describe, to_absolute

# Wednesday 15 May 2024, 10:30 UTC.
NOW = datetime(2024, 5, 15, 10, 30, tzinfo=UTC)


def at(day: int, hour: int = 0, month: int = 5, year: int = 2024) -> str:
    return datetime(year, month, day, hour, tzinfo=UTC).isoformat()


# --- ids and dicts -------------------------------------------------------------------------------


def test_the_same_command_always_has_the_same_id():
    first = make_command("JOBS", {"status": "failed", "intent": "seo_audit"})
    again = make_command("jobs", {"intent": "seo_audit", "status": "failed"})

    assert first.id == again.id
    assert len(first.id) == 16
    assert int(first.id, 16) >= 0
    assert first.type == again.type == "JOBS"


@pytest.mark.parametrize(
    "other",
    [
        make_command("JOBS", {"status": "queued"}),
        make_command("JOB", {"status": "failed"}),
        make_command("JOBS", {"status": "failed"}, is_relative=True),
        make_command("JOBS", {"status": "failed", "intent": "seo_audit"}),
    ],
)
def test_a_different_type_params_or_mode_gives_another_id(other):
    assert make_command("JOBS", {"status": "failed"}).id != other.id


def test_a_command_round_trips_through_the_seed_json():
    command = make_command("JOBS", {"period": "-1_DAY", "status": "failed"}, is_relative=True)

    data = command.to_dict()

    assert data == {
        "id": command.id,
        "type": "JOBS",
        "params": {"period": "-1_DAY", "status": "failed"},
        "isRelative": True,
    }
    assert DataCommand.from_dict(json.loads(json.dumps(data))) == command


def test_from_dict_computes_a_missing_id_and_keeps_a_given_one():
    computed = DataCommand.from_dict({"type": "agents"})
    given = DataCommand.from_dict({"id": "my-id", "type": "AGENTS", "params": {}})

    assert computed == make_command("AGENTS", {})
    assert computed.is_relative is False
    assert given.id == "my-id"


@pytest.mark.parametrize(
    "data",
    [
        ["JOBS"],
        {"params": {}},
        {"type": ""},
        {"type": "JOBS", "params": ["status"]},
        {"type": "JOBS", "isRelative": "yes"},
        {"type": "JOBS", "id": 12},
        {"type": "JOBS", "params": {"at": datetime(2024, 1, 1)}},
    ],
)
def test_malformed_commands_are_refused(data):
    with pytest.raises(ValueError):  # noqa: PT011  (the messages differ by case)
        DataCommand.from_dict(data)


# --- the transformer -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type", "params", "resource", "operation"),
    [
        ("AGENTS", {}, "agents", "list"),
        ("AGENT", {"agent_id": "agent.seo.vlevel"}, "agents", "get"),
        ("JOBS", {"agent_id": "agent.seo.vlevel", "status": "failed", "intent": "seo_audit"}, "jobs", "list"),
        ("JOB", {"job_id": "3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11"}, "jobs", "get"),
        ("SESSIONS", {"status": "ACTIVE", "phase": "IDLE", "type": "CHAT"}, "sessions", "list"),
        ("SESSION", {"session_id": "3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11"}, "sessions", "get"),
        ("SCHEMA", {"name": "job_envelope"}, "schemas", "get"),
        ("MANIFEST", {}, "manifests", "get"),
    ],
)
def test_built_in_types_map_to_our_resources(type, params, resource, operation):
    command = make_command(type, params)

    assert not is_delegated(command)
    assert transform(command, now=NOW) == ExecutableCommand(resource, operation, params)


def test_a_delegated_type_keeps_its_case():
    command = make_command("mcp__chrome-devtools__take_snapshot", {"url": "https://shop.example.com"})

    assert command.type == "mcp__chrome-devtools__take_snapshot"
    assert is_delegated(command)
    assert transform(command, now=NOW).resource == "mcp__chrome-devtools__take_snapshot"


def test_other_types_are_delegated_with_their_operation():
    command = make_command("TOOL_DATA", {"operation": "batch_create", "tool": "crm"})

    assert is_delegated(command)
    assert transform(command, now=NOW) == ExecutableCommand("tool_data", "batch_create", {"tool": "crm"})
    assert transform(make_command("ZONES", {}), now=NOW) == ExecutableCommand("zones", "get", {})


def test_tool_config_and_tool_instances_are_the_platforms_tools():
    """The seed's CommandTransformer: TOOL_CONFIG -> tools.get, TOOL_INSTANCES -> tools.list."""
    config = make_command("TOOL_CONFIG", {"tool_id": "mcp__vector__upsert"})

    assert not is_delegated(config)
    assert transform(config, now=NOW) == ExecutableCommand("tools", "get", {"tool_id": "mcp__vector__upsert"})
    assert transform(make_command("TOOL_INSTANCES", {}), now=NOW) == ExecutableCommand("tools", "list", {})


@pytest.mark.parametrize(
    ("type", "params", "message"),
    [
        ("AGENT", {}, "AGENT needs agent_id"),
        ("JOB", {"job_id": ""}, "JOB needs job_id"),
        ("JOBS", {"colour": "red"}, "JOBS does not take colour"),
        ("AGENTS", {"operation": "delete"}, "AGENTS does not take operation"),
    ],
)
def test_built_in_types_refuse_missing_or_unknown_params(type, params, message):
    with pytest.raises(ValueError, match=message):
        transform(make_command(type, params), now=NOW)


# --- periods -------------------------------------------------------------------------------------

# A day starting at 06:00 and weeks starting on Sunday: Wednesday 15 May 10:30 is in the week
# Sunday 12 May 06:00 - Sunday 19 May 06:00.
SHOP = {"day_start_hour": 6, "week_start_day": "SUNDAY"}


@pytest.mark.parametrize(
    ("period", "start", "end"),
    [
        ("0_DAY", at(15, 6), at(16, 6)),
        ("-1_DAY", at(14, 6), at(15, 6)),
        ("1_DAY", at(16, 6), at(17, 6)),
        ("0_WEEK", at(12, 6), at(19, 6)),
        ("-1_WEEK", at(5, 6), at(12, 6)),
        ("0_MONTH", at(1, 6), at(1, 6, month=6)),
        ("-2_MONTH", at(1, 6, month=3), at(1, 6, month=4)),
        ("-5_MONTH", at(1, 6, month=12, year=2023), at(1, 6, month=1)),
        ("0_YEAR", at(1, 6, month=1), at(1, 6, month=1, year=2025)),
        ("-1_YEAR", at(1, 6, month=1, year=2023), at(1, 6, month=1)),
    ],
)
def test_relative_periods_resolve_from_now_in_the_shop_calendar(period, start, end):
    command = make_command("JOBS", {"period": period}, is_relative=True)

    resolved = transform(command, now=NOW, **SHOP).params["period"]

    assert resolved == {"start": start, "end": end}


def test_just_before_the_day_start_hour_it_is_still_the_previous_day():
    sunday_early = datetime(2024, 5, 19, 5, 59, tzinfo=UTC)  # the shop's Saturday, still last week
    calendar = Calendar(**SHOP)

    assert RelativePeriod.parse("0_DAY").resolve(sunday_early, calendar).start.isoformat() == at(18, 6)
    assert RelativePeriod.parse("0_WEEK").resolve(sunday_early, calendar).start.isoformat() == at(12, 6)
    six = sunday_early + timedelta(minutes=1)
    assert RelativePeriod.parse("0_WEEK").resolve(six, calendar).start.isoformat() == at(19, 6)
    first_of_june_early = datetime(2024, 6, 1, 5, tzinfo=UTC)
    assert RelativePeriod.parse("0_MONTH").resolve(first_of_june_early, calendar).start.isoformat() == at(1, 6)


def test_periods_keep_the_time_zone_of_now():
    paris = timezone(timedelta(hours=2))
    now = datetime(2024, 5, 15, 1, 0, tzinfo=paris)

    assert to_absolute("0_DAY", now=now, calendar=Calendar()) == {
        "start": "2024-05-15T00:00:00+02:00",
        "end": "2024-05-16T00:00:00+02:00",
    }


def test_absolute_periods_pass_through():
    period = {"start": "2024-05-01T00:00:00+00:00", "end": "2024-05-02T00:00:00+00:00"}

    assert transform(make_command("JOBS", {"period": period}), now=NOW, **SHOP).params["period"] == period


@pytest.mark.parametrize(
    "period",
    [
        "yesterday",
        "-1_DECADE",
        "1_day_",
        "-99999_DAY",
        {"start": "2024-05-02T00:00:00Z", "end": "2024-05-01T00:00:00Z"},
        {"start": "soon", "end": "later"},
        {"start": "2024-05-01T00:00:00Z"},
        7,
    ],
)
def test_malformed_periods_are_refused(period):
    with pytest.raises(ValueError):  # noqa: PT011
        transform(make_command("JOBS", {"period": period}, is_relative=True), now=NOW)


@pytest.mark.parametrize(("hour", "day"), [(24, "MONDAY"), (-1, "MONDAY"), (True, "MONDAY"), (0, "LUNDI")])
def test_a_bad_calendar_is_refused(hour, day):
    with pytest.raises(ValueError, match=r"day_start_hour|week_start_day"):
        Calendar(hour, day)


ONE_DAY = {"start": "2024-05-01T06:00:00+00:00", "end": "2024-05-02T06:00:00+00:00"}


@pytest.mark.parametrize(
    ("period", "words"),
    [
        ("0_DAY", "today"),
        ("-1_DAY", "yesterday"),
        ("-3_DAY", "3 days ago"),
        ("0_WEEK", "this week"),
        ("-1_MONTH", "last month"),
        ("2_YEAR", "in 2 years"),
        (ONE_DAY, "2024-05-01 06:00 to 2024-05-02 06:00"),
    ],
)
def test_periods_are_described_in_plain_english(period, words):
    assert describe(period) == words


# --- results and system messages -------------------------------------------------------------------


def test_a_system_message_keeps_data_out_of_command_results_and_formats_it_once():
    jobs = make_command("JOBS", {})
    results = [
        command_result(jobs, "SUCCESS", summary="Jobs: 1", data=[{"jobId": "j1"}]),
        {**command_result(jobs, "SUCCESS", summary="Jobs: 1", data=[{"jobId": "j1"}]), "status": "CACHED"},
        command_result(make_command("JOB", {"job_id": "x"}), "FAILED", error="No job x."),
    ]

    message = system_message("DATA_ADDED", results)

    assert message["type"] == "DATA_ADDED"
    assert all("data" not in result for result in message["commandResults"])
    assert message["summary"].startswith("3 command(s): 1 succeeded, 1 failed, 1 cached.")
    assert message["formattedData"] == (
        '### Jobs: 1\n[\n  {\n    "jobId": "j1"\n  }\n]\n\n### Jobs: 1\nSame data as above.\n\n'
        "### JOB failed\nError: No job x."
    )
    assert system_message("ACTIONS_EXECUTED", results)["formattedData"] is None
