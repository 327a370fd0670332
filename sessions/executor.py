"""The CommandExecutor (seed 003, sections 4 and 13): the single place that runs data commands
and writes their SystemMessage, for user enrichments, model queries and agent-reported results.

Built-in resources are read-only and seen through the session's agent: every query starts from
``visible_to(Principal(agent=agent))``, so another agent's objects are "not found", never shown.
Commands for other resources are delegated to the agent; nothing runs here for them.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, cast

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Model, QuerySet
from django.utils import timezone

from agents.envelope import AgentOutput, JobEnvelopeIn
from agents.manifest import Manifest
from agents.models import Agent, AgentManifest, Job
from agents.registry import manifest_tools
from governance.kernel.principals import Principal
from sessions.commands import (
    PERIOD_PARAM,
    SCHEMA_NAMES,
    STATUSES,
    CommandStatus,
    DataCommand,
    command_result,
    is_delegated,
    system_message,
    transform,
)
from sessions.machine import EndReason, Phase, SessionType, SystemMessageType
from sessions.models import AISession
from sessions.periods import Calendar, Period

MAX_ROWS = 50
SUCCESS, FAILED, CACHED = CommandStatus.SUCCESS.value, CommandStatus.FAILED.value, CommandStatus.CACHED.value


class CommandError(Exception):
    """A command that cannot be answered (unknown or invisible object, bad value): FAILED."""


@dataclass(frozen=True)
class Outcome:
    summary: str
    data: Any


@dataclass
class CommandBatch:
    results: list[dict[str, Any]] = field(default_factory=list)
    delegated: list[DataCommand] = field(default_factory=list)
    system_message: dict[str, Any] | None = None


# --- public API --------------------------------------------------------------------------------


def execute(
    commands: list[DataCommand],
    *,
    agent: Agent,
    now: datetime,
    day_start_hour: int = 0,
    week_start_day: str = "MONDAY",
) -> CommandBatch:
    """Run the built-in commands as ``agent`` sees the platform, set the others aside for it.
    A failing command is reported FAILED and the others still run; a command repeated in the
    batch (same id) is answered from its first run as CACHED. Days follow settings.TIME_ZONE."""
    calendar = Calendar(day_start_hour, week_start_day)  # a bad calendar is the caller's error
    principal, now = Principal(agent=agent), timezone.localtime(now)
    batch, answered = CommandBatch(), {}
    for command in commands:
        if is_delegated(command):
            batch.delegated.append(command)
        elif command.id in answered:
            batch.results.append({**answered[command.id], "status": CACHED})
        else:
            answered[command.id] = _run(command, principal, now, calendar)
            batch.results.append(answered[command.id])
    if batch.results:
        batch.system_message = system_message(SystemMessageType.DATA_ADDED, batch.results)
    return batch


def record_agent_results(commands: list[dict[str, Any]], results: list[dict[str, Any]], *, kind: str) -> dict[str, Any]:
    """The SystemMessage for what the agent reports after running delegated queries
    (DATA_ADDED) or actions (ACTIONS_EXECUTED). ``commands`` may be all the AI message's commands:
    for queries, only the delegated ones expect a result (the built-in ones were answered here,
    and an agent may not answer them in the platform's place). Results are checked loosely: one
    for an unknown command id, a repeat, or one without a valid status becomes FAILED, and so
    does an expected command with no result."""
    if kind not in (SystemMessageType.DATA_ADDED, SystemMessageType.ACTIONS_EXECUTED):
        raise ValueError(f"agent results are DATA_ADDED or ACTIONS_EXECUTED, not {kind!r}")
    queries = kind == SystemMessageType.DATA_ADDED
    expected = {c.id: c for c in map(DataCommand.from_dict, commands) if not queries or is_delegated(c)}
    reported: dict[str, dict[str, Any]] = {}
    rejected: list[dict[str, Any]] = []
    for raw in results:
        command_id = raw.get("commandId") if isinstance(raw, dict) else None
        if not isinstance(command_id, str) or command_id not in expected:
            rejected.append(_rejection(command_id, "no command awaiting a result has this id"))
        elif command_id in reported:
            rejected.append(_rejection(command_id, "a result for this command was already reported"))
        else:
            reported[command_id] = _reported(raw, expected[command_id], keep_data=queries)
    ordered = [
        reported.get(command_id) or command_result(command, FAILED, error="the agent reported no result")
        for command_id, command in expected.items()
    ]
    return system_message(SystemMessageType(kind), ordered + rejected)


def _rejection(command_id: Any, why: str) -> dict[str, Any]:
    return {"commandId": command_id, "status": FAILED, "summary": "Rejected result", "error": f"{why}: {command_id!r}"}


# --- results and messages ----------------------------------------------------------------------


def _run(command: DataCommand, principal: Principal, now: datetime, calendar: Calendar) -> dict[str, Any]:
    try:
        executable = transform(
            command, now=now, day_start_hour=calendar.day_start_hour, week_start_day=calendar.week_start_day
        )
        outcome = HANDLERS[executable.resource, executable.operation](executable.params, principal)
    except (ValueError, CommandError) as exc:
        return command_result(command, FAILED, error=str(exc))
    data = json.loads(json.dumps(outcome.data, cls=DjangoJSONEncoder))  # dates, UUIDs -> JSON
    return command_result(command, SUCCESS, summary=outcome.summary, data=data)


def _reported(raw: dict[str, Any], command: DataCommand, *, keep_data: bool) -> dict[str, Any]:
    status = str(raw.get("status", "")).upper()
    if status not in STATUSES:
        known = ", ".join(STATUSES)
        return command_result(command, FAILED, error=f"invalid status {raw.get('status')!r} ({known})")
    summary = raw.get("summary") if isinstance(raw.get("summary"), str) else ""
    data = raw.get("data") if keep_data and status != FAILED else None
    if isinstance(data, list) and len(data) > MAX_ROWS:
        summary = f"{summary or command.type}: first {MAX_ROWS} of {len(data)} rows (truncated)"
        data = data[:MAX_ROWS]
    result = command_result(command, status, summary=summary, data=data, error=str(raw.get("error") or ""))
    if raw.get("simulated") is True:  # the scripted demo's stand-ins (sessions/hosted.py): nothing ran
        result["simulated"] = True
    return result


# --- param helpers -----------------------------------------------------------------------------


def _text(params: dict[str, Any], key: str, choices: Any = None) -> str:
    """A string param ("" when absent); with ``choices``, the one it names, in any case."""
    value = params.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CommandError(f"{key} must be a string, not {value!r}")
    if choices is None:
        return value
    for choice in choices:
        if value.upper() == choice.upper():
            return choice
    raise CommandError(f"{key} must be one of {', '.join(choices)}, not {value!r}")


def _uuid(params: dict[str, Any], key: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(params[key]))
    except ValueError:
        raise CommandError(f"{key} {params[key]!r} is not a UUID") from None


def _one(queryset: QuerySet, what: str, **lookup: Any) -> Model:
    """The object, or "not found" — also for an object that exists but is not visible."""
    found = queryset.filter(**lookup).first()
    if found is None:
        raise CommandError(f"No {what} {next(iter(lookup.values()))}.")
    return found


def _page(queryset: QuerySet, fields: tuple[tuple[str, str], ...], noun: str, params: dict[str, Any]) -> Outcome:
    """At most MAX_ROWS rows, newest first; the summary names the filters and any truncation."""
    rows = list(queryset[: MAX_ROWS + 1])
    filters = ", ".join(f"{key}={_shown(key, value)}" for key, value in params.items() if value not in (None, ""))
    title = f"{noun} ({filters})" if filters else noun
    if len(rows) <= MAX_ROWS:
        return Outcome(f"{title}: {len(rows)}", [_row(obj, fields) for obj in rows])
    note = f"{MAX_ROWS} of {queryset.count()}, truncated to the {MAX_ROWS} most recent"
    return Outcome(f"{title}: {note}", [_row(obj, fields) for obj in rows[:MAX_ROWS]])


def _shown(key: str, value: Any) -> str:
    return Period.from_dict(value).describe() if key == PERIOD_PARAM else str(value)


def _created_in(queryset: QuerySet, params: dict[str, Any]) -> QuerySet:
    if params.get(PERIOD_PARAM) is None:
        return queryset
    period = Period.from_dict(params[PERIOD_PARAM])
    return queryset.filter(created_at__gte=period.start, created_at__lt=period.end)


def _fields(spec: str) -> tuple[tuple[str, str], ...]:
    """``"job_id agent.agent_id parentJobId=parent_id"`` -> ((key, attribute path), ...); the key
    is the camelCase of the path's last name unless given."""
    pairs = []
    for item in spec.split():
        key, _, path = item.rpartition("=")
        first, *rest = path.rsplit(".", 1)[-1].split("_")
        pairs.append((key or first + "".join(word.title() for word in rest), path))
    return tuple(pairs)


def _row(obj: Model, fields: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """Those attributes of ``obj`` (a path through a missing relation gives None)."""
    row = {}
    for key, path in fields:
        value: Any = obj
        for name in path.split("."):
            value = getattr(value, name, None) if value is not None else None
        row[key] = value
    return row


# --- built-in resources (read-only, through visible_to) ---------------------------------------

AGENT_ROW = _fields("agent_id name role domain owner activeVersion=active_manifest.version created_at")
JOB_ROW = _fields("job_id agent.agent_id intent status priority created_at started_at finished_at current_node")
JOB_DETAIL = JOB_ROW + _fields(
    "trace_id parentJobId=parent_id scope payload constraints context expires_at visited_nodes retry_count"
    " intermediate budget errors output pre_conditions post_conditions"
)
SESSION_ROW = _fields(
    "session_id name type phase is_active end_reason total_roundtrips automation_id created_at last_activity"
)
SESSION_DETAIL = SESSION_ROW + _fields("require_validation waiting_context tokens_used")
MANIFEST_FIELDS = _fields("agent.agent_id version content_hash created_at document")


def _jobs(principal: Principal) -> QuerySet[Job]:
    return Job.objects.visible_to(principal).select_related("agent")


def _sessions(principal: Principal) -> QuerySet[AISession]:
    """Sessions have no access rule of their own: they are visible with their agent."""
    return AISession.objects.filter(agent__in=Agent.objects.visible_to(principal))


def _agents(principal: Principal) -> QuerySet[Agent]:
    return Agent.objects.visible_to(principal).select_related("active_manifest")


def list_agents(params: dict[str, Any], principal: Principal) -> Outcome:
    agents = _agents(principal).filtered(**{key: _text(params, key) for key in ("role", "domain", "owner")})
    return _page(agents, AGENT_ROW, "Agents", params)


def get_agent(params: dict[str, Any], principal: Principal) -> Outcome:
    agent = _one(_agents(principal), "agent", agent_id=_text(params, "agent_id"))
    return Outcome(f"Agent {agent.agent_id}", _row(agent, AGENT_ROW))


def list_jobs(params: dict[str, Any], principal: Principal) -> Outcome:
    jobs = _jobs(principal).filtered(status=_text(params, "status", Job.Status.values), intent=_text(params, "intent"))
    if params.get("agent_id") is not None:
        jobs = jobs.filter(agent__agent_id=_text(params, "agent_id"))
    return _page(_created_in(jobs, params), JOB_ROW, "Jobs", params)


def get_job(params: dict[str, Any], principal: Principal) -> Outcome:
    job = _one(_jobs(principal), "job", pk=_uuid(params, "job_id"))
    return Outcome(f"Job {job.job_id} ({job.intent}, {job.status})", _row(job, JOB_DETAIL))


SESSION_STATUSES = ("ACTIVE", "ENDED", *(reason.value for reason in EndReason))


def _session_filters(params: dict[str, Any]) -> dict[str, Any]:
    """phase, type, and status: ACTIVE (running now), ENDED (any end) or one end reason."""
    choices = {"phase": [phase.value for phase in Phase], "type": [kind.value for kind in SessionType]}
    lookups = {key: _text(params, key, values) for key, values in choices.items() if params.get(key) is not None}
    status = _text(params, "status", SESSION_STATUSES)
    if status == "ACTIVE":
        lookups["is_active"] = True
    elif status:
        lookups.update({"end_reason__isnull": False} if status == "ENDED" else {"end_reason": status})
    return lookups


def list_sessions(params: dict[str, Any], principal: Principal) -> Outcome:
    sessions = _sessions(principal).filter(**_session_filters(params))
    return _page(_created_in(sessions, params), SESSION_ROW, "Sessions", params)


def get_session(params: dict[str, Any], principal: Principal) -> Outcome:
    session = _one(_sessions(principal), "session", pk=_uuid(params, "session_id"))
    return Outcome(f"Session {session.session_id} ({session.type}, {session.phase})", _row(session, SESSION_DETAIL))


def get_schema(params: dict[str, Any], principal: Principal) -> Outcome:
    name = _text(params, "name", SCHEMA_NAMES)
    return Outcome(f"Schema {name}", json_schema(name))


_JSON_TYPES = {"BooleanField": "boolean", "PositiveIntegerField": "integer", "ForeignKey": "integer", "JSONField": None}


@cache
def json_schema(name: str) -> dict[str, Any]:
    """What agents write (envelopes, manifests, outputs: their pydantic models) or read
    (sessions: derived from the model's fields, so it cannot drift from what SESSION returns)."""
    models = {"job_envelope": JobEnvelopeIn, "manifest": Manifest, "agent_output": AgentOutput}
    if name in models:
        return models[name].model_json_schema()
    properties = {}
    for key, path in SESSION_DETAIL:
        model_field = AISession._meta.get_field(path)
        kind = _JSON_TYPES.get(model_field.get_internal_type(), "string")
        schema: dict[str, Any] = {"type": [kind, "null"] if model_field.null else kind} if kind else {}
        if model_field.choices:
            schema["enum"] = [value for value, _ in model_field.choices] + ([None] if model_field.null else [])
        properties[key] = {**schema, "description": str(model_field.help_text or model_field.verbose_name)}
    return {"title": "AISession", "type": "object", "properties": properties}


def get_manifest(params: dict[str, Any], principal: Principal) -> Outcome:
    """The session agent's active manifest (or one of its versions)."""
    agent, version = _session_agent(principal), _text(params, "version")
    manifest = (
        cast(AgentManifest, _one(agent.manifests.all(), "manifest version", version=version))
        if version
        else agent.active_manifest
    )
    if manifest is None:
        raise CommandError(f"Agent {agent.agent_id} has no active manifest.")
    data = {**_row(manifest, MANIFEST_FIELDS), "active": manifest.pk == agent.active_manifest_id}
    return Outcome(f"Manifest {manifest.version} of {agent.agent_id}", data)


TOOL_FIELDS = tuple((name, name) for name in ("tool_id", "permission", "rate_limit", "requires_approval", "contract"))


def _session_agent(principal: Principal) -> Agent:
    """The agent the commands run for (the executor's principal is always one)."""
    if principal.agent is None:
        raise CommandError("Data commands run for an agent.")
    return principal.agent


def _granted_tools(principal: Principal) -> dict[str, Any]:
    agent = _session_agent(principal)
    if agent.active_manifest_id is None:
        raise CommandError(f"Agent {agent.agent_id} has no active manifest, so no tools.")
    return manifest_tools(agent.active_manifest_id)


def list_tools(params: dict[str, Any], principal: Principal) -> Outcome:
    """The tools the session agent's active manifest grants (the seed's TOOL_INSTANCES)."""
    tools = [_row(tool, TOOL_FIELDS) for tool in _granted_tools(principal).values()]
    return Outcome(f"{len(tools)} tools granted to {_session_agent(principal).agent_id}", tools)


def get_tool(params: dict[str, Any], principal: Principal) -> Outcome:
    """One granted tool's configuration (the seed's TOOL_CONFIG): permission, rate limit, approval."""
    tool_id = _text(params, "tool_id")
    tool = _granted_tools(principal).get(tool_id)
    if tool is None:
        raise CommandError(f"No tool {tool_id!r} in the active manifest of {_session_agent(principal).agent_id}.")
    return Outcome(f"Tool {tool_id}", _row(tool, TOOL_FIELDS))


HANDLERS: dict[tuple[str, str], Callable[[dict[str, Any], Principal], Outcome]] = {
    ("agents", "list"): list_agents,
    ("agents", "get"): get_agent,
    ("jobs", "list"): list_jobs,
    ("jobs", "get"): get_job,
    ("sessions", "list"): list_sessions,
    ("sessions", "get"): get_session,
    ("schemas", "get"): get_schema,
    ("manifests", "get"): get_manifest,
    ("tools", "list"): list_tools,
    ("tools", "get"): get_tool,
}
