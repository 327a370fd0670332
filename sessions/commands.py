"""Data commands and the CommandTransformer (seed 003, sections 2, 4 and 9). Pure: no Django.

A :class:`DataCommand` is what a user's enrichment or the model asks for; :func:`transform` turns
it into an :class:`ExecutableCommand` (resource + operation + params with periods resolved).

The built-in resources are the platform's own data (agents, jobs, sessions, schemas, the active
manifest), read-only and scoped by the executor to what the session's agent may see. Any other
command type is the agent's business: it is delegated, with ``resource`` = the type lowercased.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, cast

from sessions.machine import SystemMessageType
from sessions.periods import Calendar, to_absolute

PERIOD_PARAM = "period"
SCHEMA_NAMES = ("job_envelope", "manifest", "agent_output", "session")


@dataclass(frozen=True)
class Route:
    """Where a built-in command type goes, and the params it takes (anything else is refused,
    so a typo fails loudly instead of silently widening a query)."""

    resource: str
    operation: str
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()


ROUTES: dict[str, Route] = {
    "AGENTS": Route("agents", "list", optional=("role", "domain", "owner")),
    "AGENT": Route("agents", "get", required=("agent_id",)),
    "JOBS": Route("jobs", "list", optional=("agent_id", "status", "intent", PERIOD_PARAM)),
    "JOB": Route("jobs", "get", required=("job_id",)),
    "SESSIONS": Route("sessions", "list", optional=("status", "phase", "type", PERIOD_PARAM)),
    "SESSION": Route("sessions", "get", required=("session_id",)),
    "SCHEMA": Route("schemas", "get", required=("name",)),
    "MANIFEST": Route("manifests", "get", optional=("version",)),
    # The seed's TOOL_CONFIG -> tools.get and TOOL_INSTANCES -> tools.list: the tools the agent's
    # active manifest grants, as the platform governs them. TOOL_DATA, ZONE_CONFIG and ZONES are
    # the seed application's own data: delegated to the agent.
    "TOOL_CONFIG": Route("tools", "get", required=("tool_id",)),
    "TOOL_INSTANCES": Route("tools", "list"),
}


@dataclass(frozen=True)
class DataCommand:
    """A query as the seed's JSON has it. ``params`` is excluded from the hash (a dict is not
    hashable); the id, derived from it, stands for it."""

    id: str
    type: str
    params: dict[str, Any] = field(hash=False)
    is_relative: bool = False

    @classmethod
    def from_dict(cls, data: Any) -> DataCommand:
        """Read ``{"id"?, "type", "params"?, "isRelative"?}``; a missing id is computed. A given id
        is kept, so results can be matched to the id the sender knows."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a data command is an object, not {type(data).__name__}")
        is_relative = data.get("isRelative", False)
        if not isinstance(is_relative, bool):
            raise ValueError(f"isRelative must be true or false, not {is_relative!r}")
        # make_command checks at run time that the type is a non-empty string (the sender's JSON may not be)
        command = make_command(cast(str, data.get("type")), data.get("params") or {}, is_relative)
        given = data.get("id")
        if given in (None, ""):
            return command
        if not isinstance(given, str):
            raise ValueError(f"a command id is a string, not {given!r}")
        return cls(given, command.type, command.params, is_relative)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": self.type, "params": self.params, "isRelative": self.is_relative}


@dataclass(frozen=True)
class ExecutableCommand:
    resource: str
    operation: str
    params: dict[str, Any]


def make_command(type: str, params: Mapping[str, Any] | None = None, is_relative: bool = False) -> DataCommand:
    """A command with its deterministic id: the same type, params and mode give the same id, so
    a query repeated in one batch can be answered from the first run (CACHED)."""
    if not isinstance(type, str) or not type.strip():
        raise ValueError(f"a command type is a non-empty string, not {type!r}")
    if not isinstance(params, Mapping | None):
        raise ValueError(f"command params are an object, not {params!r}")
    normalized = _canonical_type(type)
    params = dict(params or {})
    return DataCommand(command_id(normalized, params, is_relative), normalized, params, is_relative)


def _canonical_type(type: str) -> str:
    """Built-in types in capitals, whatever the sender wrote; a delegated type is kept as given,
    since it may name one of the agent's tools, whose ids are case-sensitive."""
    stripped = type.strip()
    return stripped.upper() if stripped.upper() in ROUTES else stripped


def command_id(type: str, params: Mapping[str, Any], is_relative: bool) -> str:
    """First 16 hex chars of SHA-256 over canonical JSON (keys sorted) of the three fields."""
    try:
        canonical = json.dumps(
            {"type": type, "params": params, "isRelative": is_relative},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
    except TypeError as exc:
        raise ValueError(f"command params must be JSON: {exc}") from exc
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def is_delegated(command: DataCommand) -> bool:
    """Not one of ours: the agent runs it on its own tools and reports the results."""
    return command.type.upper() not in ROUTES


def route_of(command: DataCommand) -> tuple[str, str]:
    """(resource, operation) without checking params, to label a result even when it fails."""
    route = ROUTES.get(command.type.upper())
    if route is not None:
        return route.resource, route.operation
    return command.type.lower(), str(command.params.get("operation", "get"))


def transform(
    command: DataCommand, *, now: datetime, day_start_hour: int = 0, week_start_day: str = "MONDAY"
) -> ExecutableCommand:
    """The CommandTransformer. Raises ``ValueError`` on params a built-in type does not take,
    on a missing required param, and on a malformed period.

    Decision: a relative period is resolved from ``now`` whatever ``is_relative`` says (it can
    only mean one thing); ``is_relative`` records that the command was written to be resolved at
    execution time (AUTOMATION) rather than at writing time (CHAT)."""
    resource, operation = route_of(command)
    params = dict(command.params)
    route = ROUTES.get(command.type.upper())
    if route is None:
        params.pop("operation", None)
    else:
        _check_params(command.type, params, route)
    if params.get(PERIOD_PARAM) is not None:
        params[PERIOD_PARAM] = to_absolute(
            params[PERIOD_PARAM], now=now, calendar=Calendar(day_start_hour, week_start_day)
        )
    return ExecutableCommand(resource, operation, params)


def _check_params(type: str, params: Mapping[str, Any], route: Route) -> None:
    missing = [name for name in route.required if params.get(name) in (None, "")]
    if missing:
        raise ValueError(f"{type} needs {', '.join(missing)}")
    unknown = sorted(set(params) - set(route.required) - set(route.optional))
    if unknown:
        allowed = ", ".join(route.required + route.optional) or "no params"
        raise ValueError(f"{type} does not take {', '.join(unknown)} (it takes {allowed})")


# --- CommandResult and SystemMessage -------------------------------------------------------------


class CommandStatus(StrEnum):
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    CACHED = "CACHED"  # the same command (same id) earlier in the batch: its answer is reused


STATUSES = tuple(status.value for status in CommandStatus)
_STATUS_WORDS = {"SUCCESS": "succeeded", "FAILED": "failed", "CANCELLED": "cancelled", "CACHED": "cached"}


def command_result(
    command: DataCommand, status: str, *, summary: str = "", data: Any = None, error: str = ""
) -> dict[str, Any]:
    """The seed's CommandResult as JSON: a FAILED one carries ``error``, others may carry
    ``data`` (which must already be JSON)."""
    resource, operation = route_of(command)
    status = CommandStatus(status).value
    result = {
        "commandId": command.id,
        "type": command.type,
        "resource": resource,
        "operation": operation,
        "status": status,
        "summary": summary or f"{command.type} {_STATUS_WORDS[status]}",
    }
    if status == CommandStatus.FAILED:
        result["error"] = error or "failed without a message"
    elif data is not None:
        result["data"] = data
    return result


def system_message(kind: str, results: list[dict[str, Any]]) -> dict[str, Any]:
    """The seed's SystemMessage for a series of results. ``commandResults`` never carry data;
    the data goes, for DATA_ADDED only, into ``formattedData`` for the prompt."""
    kind = SystemMessageType(kind)
    counts = Counter(result["status"] for result in results)
    tally = ", ".join(f"{counts[status]} {_STATUS_WORDS[status]}" for status in STATUSES if counts[status])
    details = "; ".join(r["summary"] + (f" ({r['error']})" if "error" in r else "") for r in results)
    return {
        "type": kind.value,
        "commandResults": [{key: value for key, value in r.items() if key != "data"} for r in results],
        "summary": f"{len(results)} command(s): {tally}. {details}",
        "formattedData": formatted_data(results) if kind == SystemMessageType.DATA_ADDED else None,
    }


def formatted_data(results: list[dict[str, Any]]) -> str:
    """Each result under a ``### summary`` title, then its data as indented JSON (or its error);
    data is shown once even when a command was repeated."""
    blocks, shown = [], set()
    for result in results:
        if "error" in result:
            body = f"Error: {result['error']}"
        elif "data" not in result:
            body = f"No data ({_STATUS_WORDS[result['status']]})."
        elif result["commandId"] in shown:
            body = "Same data as above."
        else:
            body = json.dumps(result["data"], indent=2, ensure_ascii=False)
            shown.add(result["commandId"])
        blocks.append(f"### {result['summary']}\n{body}")
    return "\n\n".join(blocks)
