"""The CommandExecutor on the real database: results scoped to the session's agent, delegation,
the DATA_ADDED SystemMessage, truncation, period filtering, and agent-reported results."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.utils import timezone

from agents.envelope import JobEnvelopeIn
from agents.jobs.submission import submit_job
from agents.models import Job
from governance.kernel.principals import Principal
from sessions.commands import DataCommand, make_command
from sessions.executor import MAX_ROWS, execute, record_agent_results
from tests.factories.sessions import AISessionFactory


def vlevel_job(agent, n: int = 0) -> Job:
    envelope = {
        "intent": "seo_audit",
        "scope": {"entityType": "page", "entityIds": [f"p{n}"]},
        "payload": {"urls": [f"https://example.com/{n}"], "depth": 2},
        "context": {"source": "cron"},
    }
    return submit_job(JobEnvelopeIn.model_validate(envelope), actor=Principal(agent=agent))[0]


def architect_job(agent) -> Job:
    envelope = {
        "intent": "kg_diagnose",
        "scope": {"entityType": "all"},
        "payload": {"escalation": {"triggers": ["confidence < 0.7"]}},
        "context": {"source": "event"},
    }
    return submit_job(JobEnvelopeIn.model_validate(envelope), actor=Principal(agent=agent))[0]


def created_at(job: Job, moment: datetime) -> None:
    Job.objects.filter(pk=job.pk).update(created_at=moment)


def run(agent, *commands: DataCommand, now: datetime | None = None, **calendar):
    return execute(list(commands), agent=agent, now=now or timezone.now(), **calendar)


def only(batch) -> dict:
    (result,) = batch.results
    return result


@pytest.mark.django_db
def test_agents_are_those_the_agent_may_see(vlevel, architect):
    batch = run(vlevel, make_command("AGENTS", {}), make_command("AGENT", {"agent_id": "agent.seo.vlevel"}))

    listed, one = batch.results
    assert (listed["status"], listed["resource"], listed["operation"]) == ("SUCCESS", "agents", "list")
    assert [row["agentId"] for row in listed["data"]] == ["agent.seo.vlevel"]
    assert one["data"]["activeVersion"] == "1.0.0"
    assert one["summary"] == "Agent agent.seo.vlevel"


@pytest.mark.django_db
def test_another_agents_objects_are_not_found_and_never_leaked(vlevel, architect):
    theirs = architect_job(architect)
    session = AISessionFactory(agent=architect, name="theirs")
    commands = [
        make_command("AGENT", {"agent_id": "agent.seo.architect"}),
        make_command("JOB", {"job_id": str(theirs.job_id)}),
        make_command("SESSION", {"session_id": str(session.session_id)}),
    ]

    batch = run(vlevel, *commands)

    assert [result["status"] for result in batch.results] == ["FAILED"] * 3
    assert batch.results[1]["error"] == f"No job {theirs.job_id}."
    everything = json.dumps(batch.results) + json.dumps(batch.system_message)
    assert "kg_diagnose" not in everything
    assert "theirs" not in everything
    assert run(architect, commands[1]).results[0]["data"]["intent"] == "kg_diagnose"


@pytest.mark.django_db
def test_jobs_list_and_detail(vlevel, architect):
    job = vlevel_job(vlevel)
    architect_job(architect)

    listed, detail = run(vlevel, make_command("JOBS", {}), make_command("JOB", {"job_id": str(job.job_id)})).results

    assert [row["jobId"] for row in listed["data"]] == [str(job.job_id)]
    assert listed["summary"] == "Jobs: 1"
    assert detail["data"]["jobId"] == str(job.job_id)
    assert detail["data"]["payload"]["urls"] == ["https://example.com/0"]
    assert detail["data"]["preConditions"][0]["passed"] is True
    assert detail["summary"] == f"Job {job.job_id} (seo_audit, queued)"


@pytest.mark.django_db
def test_a_failing_command_does_not_stop_the_others(vlevel):
    vlevel_job(vlevel)
    commands = [
        make_command("JOB", {"job_id": "not-a-uuid"}),
        make_command("JOBS", {"status": "sleeping"}),
        make_command("JOBS", {"colour": "red"}),
        make_command("SCHEMA", {"name": "secrets"}),
        make_command("JOBS", {"status": "QUEUED"}),
    ]

    results = run(vlevel, *commands).results

    assert [result["status"] for result in results] == ["FAILED", "FAILED", "FAILED", "FAILED", "SUCCESS"]
    assert results[0]["error"] == "job_id 'not-a-uuid' is not a UUID"
    assert results[1]["error"].startswith("status must be one of queued, running")
    assert results[2]["error"].startswith("JOBS does not take colour")
    assert all("data" not in result for result in results[:4])
    assert len(results[4]["data"]) == 1


def may(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2024, 5, day, hour, minute, tzinfo=UTC)


@pytest.mark.django_db
def test_jobs_are_filtered_by_period_of_creation(vlevel):
    now = may(15, 10, 30)
    moments = [may(14, 5), may(14, 10), may(15, 5, 59), may(15, 7), now]
    jobs = [vlevel_job(vlevel, n) for n in range(len(moments))]
    for job, moment in zip(jobs, moments, strict=True):
        created_at(job, moment)
    ids = [str(job.job_id) for job in jobs]
    today = {"start": may(15, 6).isoformat(), "end": may(16, 6).isoformat()}

    relative = run(vlevel, make_command("JOBS", {"period": "-1_DAY"}, is_relative=True), now=now, day_start_hour=6)
    absolute = run(vlevel, make_command("JOBS", {"period": today}), now=now)

    # With days starting at 06:00, yesterday is 14 May 06:00 - 15 May 06:00.
    assert [row["jobId"] for row in only(relative)["data"]] == [ids[2], ids[1]]
    assert only(relative)["summary"] == "Jobs (period=2024-05-14 06:00 to 2024-05-15 06:00): 2"
    assert [row["jobId"] for row in only(absolute)["data"]] == [ids[4], ids[3]]


@pytest.mark.django_db
def test_lists_are_capped_and_say_so(vlevel):
    for n in range(MAX_ROWS + 3):
        vlevel_job(vlevel, n)

    result = only(run(vlevel, make_command("JOBS", {"intent": "seo_audit"})))

    assert len(result["data"]) == MAX_ROWS
    assert result["summary"] == "Jobs (intent=seo_audit): 50 of 53, truncated to the 50 most recent"
    assert "truncated" in run(vlevel, make_command("JOBS", {})).system_message["summary"]


@pytest.mark.django_db
def test_other_resources_are_delegated_and_not_executed(vlevel):
    tool = make_command("TOOL_DATA", {"operation": "query", "tool": "gsc"})

    alone = run(vlevel, tool)
    mixed = run(vlevel, tool, make_command("AGENTS", {}))

    assert (alone.results, alone.delegated, alone.system_message) == ([], [tool], None)
    assert mixed.delegated == [tool]
    assert [result["type"] for result in mixed.results] == ["AGENTS"]
    assert [result["type"] for result in mixed.system_message["commandResults"]] == ["AGENTS"]


@pytest.mark.django_db
def test_the_system_message_formats_the_data_under_titles(vlevel):
    job = vlevel_job(vlevel)
    agents, job_command = make_command("AGENTS", {}), make_command("JOB", {"job_id": str(job.job_id)})

    batch = run(vlevel, agents, job_command, agents)
    message = batch.system_message

    assert message["type"] == "DATA_ADDED"
    assert [result["status"] for result in batch.results] == ["SUCCESS", "SUCCESS", "CACHED"]
    assert batch.results[2]["data"] == batch.results[0]["data"]
    assert all("data" not in result for result in message["commandResults"])
    assert message["summary"].startswith("3 command(s): 2 succeeded, 1 cached. Agents: 1; Job ")
    first, second, third = message["formattedData"].split("\n\n### ")
    assert first == "### Agents: 1\n" + json.dumps(batch.results[0]["data"], indent=2)
    assert second.startswith(f'Job {job.job_id} (seo_audit, queued)\n{{\n  "jobId": "{job.job_id}",')
    assert third == "Agents: 1\nSame data as above."


@pytest.mark.django_db
def test_sessions_schemas_and_manifest(vlevel, architect):
    mine = AISessionFactory(agent=vlevel, name="mine", type="AUTOMATION", is_active=True)
    AISessionFactory(agent=vlevel, name="old", type="CHAT", end_reason="COMPLETED", phase="COMPLETED")
    AISessionFactory(agent=architect, name="theirs", type="AUTOMATION")
    commands = [
        make_command("SESSIONS", {}),
        make_command("SESSIONS", {"status": "active", "type": "automation"}),
        make_command("SESSIONS", {"status": "ENDED"}),
        make_command("SESSION", {"session_id": str(mine.session_id)}),
        make_command("SCHEMA", {"name": "job_envelope"}),
        make_command("SCHEMA", {"name": "session"}),
        make_command("MANIFEST", {}),
    ]

    every, active, ended, detail, envelope, session, manifest = (r["data"] for r in run(vlevel, *commands).results)

    assert sorted(row["name"] for row in every) == ["mine", "old"]
    assert [row["name"] for row in active] == ["mine"]
    assert [row["endReason"] for row in ended] == ["COMPLETED"]
    assert detail["sessionId"] == str(mine.session_id)
    assert detail["tokensUsed"] == {}
    assert "intent" in envelope["properties"]
    assert set(session["properties"]) >= {"sessionId", "phase", "isActive", "tokensUsed"}
    assert "CHAT" in session["properties"]["type"]["enum"]
    assert (manifest["agentId"], manifest["version"], manifest["active"]) == ("agent.seo.vlevel", "1.0.0", True)
    assert manifest["document"]["id"] == "agent.seo.vlevel"


@pytest.mark.django_db
def test_an_agent_without_a_manifest_gets_a_failed_manifest_command(agent):
    result = only(run(agent, make_command("MANIFEST", {})))
    assert (result["status"], result["error"]) == ("FAILED", "Agent agent.seo.vlevel has no active manifest.")


def test_tool_instances_and_tool_config_read_the_tools_the_active_manifest_grants(vlevel, architect):
    instances, config, other, unknown = run(
        vlevel,
        make_command("TOOL_INSTANCES", {}),
        make_command("TOOL_CONFIG", {"tool_id": "mcp__chrome-devtools__take_snapshot"}),
        make_command("TOOL_CONFIG", {"tool_id": "mcp__github__create_issue"}),  # the architect's, not its own
        make_command("TOOL_CONFIG", {}),
    ).results

    assert [tool["tool_id"] for tool in instances["data"]] == [
        "mcp__chrome-devtools__take_snapshot",
        "mcp__supabase__execute_sql",
    ]
    assert config["data"] == {
        "tool_id": "mcp__chrome-devtools__take_snapshot",
        "permission": "execute",
        "rate_limit": 30,
        "requires_approval": True,
        "contract": "",
    }
    assert (other["status"], unknown["status"]) == ("FAILED", "FAILED")
    assert "No tool 'mcp__github__create_issue'" in other["error"]


def test_an_agent_without_a_manifest_has_no_tools(agent):
    result = only(run(agent, make_command("TOOL_INSTANCES", {})))
    assert (result["status"], result["error"]) == (
        "FAILED",
        "Agent agent.seo.vlevel has no active manifest, so no tools.",
    )


# --- agent-reported results ------------------------------------------------------------------------

TOOL = make_command("TOOL_DATA", {"operation": "query", "tool": "gsc"})
CRM = make_command("CRM", {"operation": "list"})
AGENTS = make_command("AGENTS", {})  # built-in: answered by the executor, never by the agent


def test_reported_query_results_become_data_added():
    commands = [c.to_dict() for c in (AGENTS, TOOL, CRM)]
    results = [
        {"commandId": TOOL.id, "status": "success", "summary": "GSC clicks", "data": [{"clicks": 3}]},
        {"commandId": "forged", "status": "SUCCESS", "data": {"x": 1}},
        {"commandId": AGENTS.id, "status": "SUCCESS", "data": [{"agentId": "agent.fake"}]},
        {"commandId": TOOL.id, "status": "FAILED"},
    ]

    message = record_agent_results(commands, results, kind="DATA_ADDED")

    tool, crm, forged, built_in, repeated = message["commandResults"]
    assert (tool["status"], tool["resource"], tool["operation"], tool["summary"]) == (
        "SUCCESS",
        "tool_data",
        "query",
        "GSC clicks",
    )
    assert (crm["commandId"], crm["status"], crm["error"]) == (CRM.id, "FAILED", "the agent reported no result")
    assert (forged["status"], built_in["status"], repeated["status"]) == ("FAILED", "FAILED", "FAILED")
    assert "forged" in forged["error"]
    assert "already reported" in repeated["error"]
    assert message["formattedData"].startswith('### GSC clicks\n[\n  {\n    "clicks": 3\n  }\n]')
    assert "agent.fake" not in json.dumps(message)


def test_reported_actions_become_actions_executed_without_data():
    action = make_command("SEND_EMAIL", {"operation": "send", "to": "ops@example.com"})
    results = [{"commandId": action.id, "status": "SUCCESS", "summary": "Email sent", "data": {"id": 7}}]

    message = record_agent_results([action.to_dict()], results, kind="ACTIONS_EXECUTED")

    assert message["type"] == "ACTIONS_EXECUTED"
    assert message["formattedData"] is None
    assert message["commandResults"][0]["summary"] == "Email sent"
    assert message["summary"] == "1 command(s): 1 succeeded. Email sent"


def test_reported_results_are_checked_loosely():
    results = [{"commandId": TOOL.id, "status": "DONE"}, "garbage", {"status": "SUCCESS"}]
    many = [{"commandId": CRM.id, "status": "SUCCESS", "data": list(range(MAX_ROWS + 10))}]

    message = record_agent_results([TOOL.to_dict()], results, kind="DATA_ADDED")
    capped = record_agent_results([CRM.to_dict()], many, kind="DATA_ADDED")

    assert [result["status"] for result in message["commandResults"]] == ["FAILED", "FAILED", "FAILED"]
    assert message["commandResults"][0]["error"].startswith("invalid status 'DONE'")
    assert capped["commandResults"][0]["summary"] == "CRM: first 50 of 60 rows (truncated)"
    with pytest.raises(ValueError, match="DATA_ADDED or ACTIONS_EXECUTED"):
        record_agent_results([], [], kind="LIMIT_REACHED")
