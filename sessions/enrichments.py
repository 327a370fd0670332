"""The EnrichmentProcessor (seed 003, section 9). Pure: no Django.

An enrichment is a block the user puts in a message to hand the model context; each one becomes
data commands on the platform's own resources:

- POINTER        ``{"resource": "agent"|"job"|"session", "id": ...}``     -> AGENT / JOB / SESSION
- USE            ``{"resource": "jobs"|"sessions", "filters": {...}, "period": ...}``
                                                                          -> JOBS / SESSIONS + SCHEMA
- CREATE         ``{"kind": "job_envelope"|"manifest"|"agent_output"}``   -> SCHEMA
- MODIFY_CONFIG  ``{}``                                                    -> MANIFEST + SCHEMA(manifest)

Periods follow the session's mode: in CHAT (``is_relative=False``) "-1_DAY" is fixed to absolute
start/end when the message is written; in AUTOMATION it stays relative and is resolved at each
run by the CommandTransformer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, cast

from sessions import periods
from sessions.commands import PERIOD_PARAM, DataCommand, make_command


class EnrichmentType(StrEnum):
    POINTER = "POINTER"
    USE = "USE"
    CREATE = "CREATE"
    MODIFY_CONFIG = "MODIFY_CONFIG"


POINTER_TARGETS = {"agent": ("AGENT", "agent_id"), "job": ("JOB", "job_id"), "session": ("SESSION", "session_id")}


@dataclass(frozen=True)
class UsableResource:
    command_type: str
    schema: str
    filters: tuple[str, ...]


USABLE = {
    "jobs": UsableResource("JOBS", "job_envelope", ("agent_id", "status", "intent")),
    "sessions": UsableResource("SESSIONS", "session", ("status", "phase", "type")),
}
CREATE_KINDS = ("job_envelope", "manifest", "agent_output")


@dataclass(frozen=True)
class Mode:
    """How periods are written: fixed now (CHAT) or kept relative (AUTOMATION)."""

    is_relative: bool
    now: datetime
    calendar: periods.Calendar

    def period(self, value: Any) -> Any:
        if self.is_relative:
            periods.parse(value)  # refuse a malformed period now, not at every run
            return value
        return periods.to_absolute(value, now=self.now, calendar=self.calendar)

    def command(self, type: str, params: dict[str, Any]) -> DataCommand:
        return make_command(type, params, self.is_relative)


# --- reading configs ---------------------------------------------------------------------------


def _config(config: dict[str, Any] | str | None) -> dict[str, Any]:
    """The seed passes configs as JSON text; the UI here may pass the object itself."""
    if isinstance(config, str):
        try:
            config = json.loads(config) if config.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"enrichment config is not valid JSON: {exc.msg}") from exc
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise ValueError(f"enrichment config is an object, not {config!r}")
    return config


def _choice(config: dict[str, Any], key: str, choices: Any) -> str:
    value = config.get(key)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{key!r} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _pointer(config: dict[str, Any]) -> tuple[str, str]:
    resource = _choice(config, "resource", POINTER_TARGETS)
    target = config.get("id")
    if isinstance(target, bool) or not isinstance(target, str | int) or str(target).strip() == "":
        raise ValueError(f"POINTER needs the 'id' of the {resource}")
    return resource, str(target).strip()


def _use(config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    resource = _choice(config, "resource", USABLE)
    filters = config.get("filters") or {}
    if not isinstance(filters, dict):
        raise ValueError(f"USE filters are an object, not {filters!r}")
    unknown = sorted(set(filters) - set(USABLE[resource].filters))
    if unknown:
        raise ValueError(
            f"{resource} cannot be filtered by {', '.join(unknown)} ({', '.join(USABLE[resource].filters)})"
        )
    return resource, {key: value for key, value in filters.items() if value not in (None, "")}


# --- the four types ----------------------------------------------------------------------------


def _pointer_summary(config: dict[str, Any]) -> str:
    resource, target = _pointer(config)
    return f"Points to {resource} {target}"


def _pointer_commands(config: dict[str, Any], mode: Mode) -> list[DataCommand]:
    resource, target = _pointer(config)
    command_type, param = POINTER_TARGETS[resource]
    return [mode.command(command_type, {param: target})]


def _use_summary(config: dict[str, Any]) -> str:
    resource, filters = _use(config)
    words = [f"Uses {resource}"]
    if "agent_id" in filters:
        words.append(f"of {filters.pop('agent_id')}")
    if filters:
        words.append("with " + " and ".join(f"{key} {value}" for key, value in filters.items()))
    if config.get(PERIOD_PARAM) is not None:
        words.append(f"over {periods.describe(config[PERIOD_PARAM])}")
    return " ".join(words)


def _use_commands(config: dict[str, Any], mode: Mode) -> list[DataCommand]:
    resource, params = _use(config)
    if config.get(PERIOD_PARAM) is not None:
        params[PERIOD_PARAM] = mode.period(config[PERIOD_PARAM])
    usable = USABLE[resource]
    return [mode.command(usable.command_type, params), mode.command("SCHEMA", {"name": usable.schema})]


def _create_summary(config: dict[str, Any]) -> str:
    return f"Creates a {_choice(config, 'kind', CREATE_KINDS).replace('_', ' ')}"


def _create_commands(config: dict[str, Any], mode: Mode) -> list[DataCommand]:
    return [mode.command("SCHEMA", {"name": _choice(config, "kind", CREATE_KINDS)})]


def _modify_config_summary(config: dict[str, Any]) -> str:
    return "Modifies the agent's manifest"


def _modify_config_commands(config: dict[str, Any], mode: Mode) -> list[DataCommand]:
    return [mode.command("MANIFEST", {}), mode.command("SCHEMA", {"name": "manifest"})]


@dataclass(frozen=True)
class _Processor:
    summary: Callable[[dict[str, Any]], str]
    commands: Callable[[dict[str, Any], Mode], list[DataCommand]]


_PROCESSORS = {
    EnrichmentType.POINTER: _Processor(_pointer_summary, _pointer_commands),
    EnrichmentType.USE: _Processor(_use_summary, _use_commands),
    EnrichmentType.CREATE: _Processor(_create_summary, _create_commands),
    EnrichmentType.MODIFY_CONFIG: _Processor(_modify_config_summary, _modify_config_commands),
}


def _processor(type: str) -> _Processor:
    try:
        return _PROCESSORS[EnrichmentType(str(type).strip().upper())]
    except ValueError:
        known = ", ".join(member.value for member in EnrichmentType)
        raise ValueError(f"unknown enrichment type {type!r} (known: {known})") from None


# --- public API --------------------------------------------------------------------------------


def generate_summary(type: str, config: dict[str, Any] | str | None) -> str:
    """One line of plain English, shown in place of the block in ``linearText``."""
    return _processor(type).summary(_config(config))


def generate_commands(
    type: str,
    config: dict[str, Any] | str | None,
    *,
    is_relative: bool,
    now: datetime,
    day_start_hour: int = 0,
    week_start_day: str = "MONDAY",
) -> list[DataCommand]:
    """The data commands the block stands for. Raises ``ValueError`` on an unknown type or a
    config that does not fit it, so a bad block is refused when the message is written."""
    mode = Mode(is_relative, now, periods.Calendar(day_start_hour, week_start_day))
    return _processor(type).commands(_config(config), mode)


def rich_message(
    segments: list[dict[str, Any]],
    *,
    is_relative: bool,
    now: datetime,
    day_start_hour: int = 0,
    week_start_day: str = "MONDAY",
) -> dict[str, Any]:
    """The seed's RichMessage: the segments as given, their ``linearText`` (text, with each block's
    summary in brackets) and the ``dataCommands`` of all blocks (a command asked twice, e.g. the
    same schema, appears once)."""
    pieces: list[str] = []
    commands: dict[str, DataCommand] = {}
    for position, segment in enumerate(segments):
        kind = segment.get("type") if isinstance(segment, dict) else None
        if kind == "text":
            pieces.append(str(segment.get("text", "")))
        elif kind == "enrichment":
            # the sender's JSON may hold anything here: _processor refuses a missing or unknown type
            block_type, config = cast(str, segment.get("enrichmentType")), segment.get("config")
            pieces.append(f"[{generate_summary(block_type, config)}]")
            for command in generate_commands(
                block_type,
                config,
                is_relative=is_relative,
                now=now,
                day_start_hour=day_start_hour,
                week_start_day=week_start_day,
            ):
                commands.setdefault(command.id, command)
        else:
            raise ValueError(f"segment {position} is neither a text nor an enrichment: {segment!r}")
    return {
        "segments": [dict(segment) for segment in segments],
        "linearText": _join(pieces),
        "dataCommands": [command.to_dict() for command in commands.values()],
    }


def _join(pieces: list[str]) -> str:
    """Concatenate, adding a space where two pieces would otherwise touch ("Look at" + "[...]"),
    but not before punctuation ("[...]" + ", please")."""
    text = ""
    for piece in filter(None, pieces):
        if text and not text[-1].isspace() and not piece[0].isspace() and piece[0] not in ".,;:!?)":
            text += " "
        text += piece
    return text.strip()
