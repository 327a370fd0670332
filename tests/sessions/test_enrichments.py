"""The EnrichmentProcessor: commands and summaries of the four types, CHAT vs AUTOMATION periods,
and RichMessage assembly (pure: no database)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from sessions.commands import make_command, transform
from sessions.enrichments import generate_commands, generate_summary, rich_message

NOW = datetime(2024, 5, 15, 10, 30, tzinfo=UTC)
JOB_ID = "3f1c4a52-6a1e-4b61-9d0e-0f2b1f7d9a11"
USE_JOBS = {"resource": "jobs", "filters": {"agent_id": "agent.seo.vlevel"}, "period": "-1_DAY"}
YESTERDAY = {"start": "2024-05-14T00:00:00+00:00", "end": "2024-05-15T00:00:00+00:00"}


def commands(type: str, config, *, is_relative: bool = False, **calendar) -> list[tuple[str, dict, bool]]:
    found = generate_commands(type, config, is_relative=is_relative, now=NOW, **calendar)
    return [(command.type, command.params, command.is_relative) for command in found]


@pytest.mark.parametrize(
    ("resource", "target", "expected"),
    [
        ("agent", "agent.seo.vlevel", ("AGENT", {"agent_id": "agent.seo.vlevel"})),
        ("job", JOB_ID, ("JOB", {"job_id": JOB_ID})),
        ("session", JOB_ID, ("SESSION", {"session_id": JOB_ID})),
    ],
)
def test_a_pointer_references_one_object(resource, target, expected):
    config = {"resource": resource, "id": target}

    assert commands("POINTER", config) == [(*expected, False)]
    assert generate_summary("POINTER", config) == f"Points to {resource} {target}"


def test_use_in_chat_fixes_the_period_when_the_message_is_written():
    assert commands("USE", USE_JOBS) == [
        ("JOBS", {"agent_id": "agent.seo.vlevel", "period": YESTERDAY}, False),
        ("SCHEMA", {"name": "job_envelope"}, False),
    ]


def test_use_in_chat_follows_the_day_start_hour():
    jobs = commands("USE", USE_JOBS, day_start_hour=6)[0]

    assert jobs[1]["period"] == {"start": "2024-05-14T06:00:00+00:00", "end": "2024-05-15T06:00:00+00:00"}


def test_use_in_automation_keeps_the_period_relative_until_execution():
    (jobs, schema) = generate_commands("USE", USE_JOBS, is_relative=True, now=NOW)

    assert (jobs.type, jobs.params, jobs.is_relative) == (
        "JOBS",
        {"agent_id": "agent.seo.vlevel", "period": "-1_DAY"},
        True,
    )
    assert schema.is_relative is True
    a_week_later = datetime(2024, 5, 22, 10, 30, tzinfo=UTC)
    assert transform(jobs, now=a_week_later).params["period"] == {
        "start": "2024-05-21T00:00:00+00:00",
        "end": "2024-05-22T00:00:00+00:00",
    }


def test_an_absolute_period_is_kept_in_both_modes():
    config = {"resource": "sessions", "filters": {"type": "CHAT"}, "period": YESTERDAY}

    for is_relative in (False, True):
        assert commands("USE", config, is_relative=is_relative) == [
            ("SESSIONS", {"type": "CHAT", "period": YESTERDAY}, is_relative),
            ("SCHEMA", {"name": "session"}, is_relative),
        ]


def test_use_without_period_or_filters():
    assert commands("USE", {"resource": "sessions"}) == [
        ("SESSIONS", {}, False),
        ("SCHEMA", {"name": "session"}, False),
    ]
    assert generate_summary("USE", {"resource": "sessions"}) == "Uses sessions"


@pytest.mark.parametrize(
    ("config", "summary"),
    [
        (USE_JOBS, "Uses jobs of agent.seo.vlevel over yesterday"),
        (
            {"resource": "jobs", "filters": {"status": "failed", "intent": "seo_audit"}, "period": "0_WEEK"},
            "Uses jobs with status failed and intent seo_audit over this week",
        ),
        ({"resource": "sessions", "period": YESTERDAY}, "Uses sessions over 2024-05-14 00:00 to 2024-05-15 00:00"),
    ],
)
def test_use_summaries(config, summary):
    assert generate_summary("USE", config) == summary


@pytest.mark.parametrize("kind", ["job_envelope", "manifest", "agent_output"])
def test_create_asks_for_the_schema_of_what_is_created(kind):
    assert commands("CREATE", {"kind": kind}) == [("SCHEMA", {"name": kind}, False)]
    assert generate_summary("CREATE", {"kind": kind}) == f"Creates a {kind.replace('_', ' ')}"


def test_modify_config_asks_for_the_manifest_and_its_schema():
    assert commands("MODIFY_CONFIG", {}) == [("MANIFEST", {}, False), ("SCHEMA", {"name": "manifest"}, False)]
    assert generate_summary("modify_config", None) == "Modifies the agent's manifest"


def test_configs_may_be_json_text_as_in_the_seed():
    assert commands("USE", json.dumps(USE_JOBS)) == commands("USE", USE_JOBS)


def test_an_unknown_enrichment_type_is_refused_with_the_known_ones():
    with pytest.raises(
        ValueError, match=r"unknown enrichment type 'DELETE' \(known: POINTER, USE, CREATE, MODIFY_CONFIG\)"
    ):
        generate_commands("DELETE", {}, is_relative=False, now=NOW)
    with pytest.raises(ValueError, match="unknown enrichment type"):
        generate_summary("DELETE", {})


@pytest.mark.parametrize(
    ("type", "config", "message"),
    [
        ("POINTER", {"resource": "tool", "id": "x"}, "'resource' must be one of agent, job, session"),
        ("POINTER", {"resource": "job"}, "POINTER needs the 'id' of the job"),
        ("USE", {"resource": "jobs", "filters": {"colour": "red"}}, "jobs cannot be filtered by colour"),
        ("USE", {"resource": "jobs", "period": "yesterday"}, "offset_TYPE"),
        ("CREATE", {"kind": "session"}, "'kind' must be one of"),
        ("CREATE", "{not json", "not valid JSON"),
        ("CREATE", ["job_envelope"], "config is an object"),
    ],
)
def test_configs_that_do_not_fit_their_type_are_refused(type, config, message):
    for is_relative in (False, True):
        with pytest.raises(ValueError, match=message):
            generate_commands(type, config, is_relative=is_relative, now=NOW)


def test_a_rich_message_has_linear_text_and_the_commands_of_its_blocks():
    segments = [
        {"type": "text", "text": "Look at"},
        {"type": "enrichment", "enrichmentType": "USE", "config": USE_JOBS},
        {"type": "text", "text": "please, and"},
        {"type": "enrichment", "enrichmentType": "CREATE", "config": {"kind": "job_envelope"}},
        {"type": "text", "text": "."},
    ]

    message = rich_message(segments, is_relative=False, now=NOW)

    assert message["segments"] == segments
    assert message["linearText"] == (
        "Look at [Uses jobs of agent.seo.vlevel over yesterday] please, and [Creates a job envelope]."
    )
    jobs = make_command("JOBS", {"agent_id": "agent.seo.vlevel", "period": YESTERDAY})
    schema = make_command("SCHEMA", {"name": "job_envelope"})
    assert message["dataCommands"] == [jobs.to_dict(), schema.to_dict()]  # the schema asked twice is there once


def test_a_rich_message_in_automation_carries_relative_commands():
    segments = [{"type": "enrichment", "enrichmentType": "USE", "config": USE_JOBS}, {"type": "text", "text": " now"}]

    message = rich_message(segments, is_relative=True, now=NOW)

    assert message["linearText"] == "[Uses jobs of agent.seo.vlevel over yesterday] now"
    assert message["dataCommands"][0]["params"]["period"] == "-1_DAY"
    assert {command["isRelative"] for command in message["dataCommands"]} == {True}


def test_a_text_only_message_has_no_commands():
    message = rich_message([{"type": "text", "text": "  hello  "}], is_relative=False, now=NOW)
    assert (message["linearText"], message["dataCommands"]) == ("hello", [])


@pytest.mark.parametrize("segment", [{"type": "image"}, "text", {"type": "enrichment", "enrichmentType": "NOPE"}])
def test_a_bad_segment_is_refused(segment):
    with pytest.raises(ValueError):  # noqa: PT011
        rich_message([segment], is_relative=False, now=NOW)
