"""Parse a model's answer into the seed's AIMessage. Pure: no Django.

An answer that is not a JSON object of the expected shape is a format error: the processor
stores the `ai_response_invalid_format` fallback and asks the model again (seed section 2).
Communication modules are checked against their schemas; an unknown module type is dropped,
a known one with bad data is a format error the model can correct (seed sections 12 and 13).
"""

from __future__ import annotations

import json
import re
from typing import Any

from sessions.commands import make_command

FALLBACK_PREFIX = "ai_response_invalid_format"
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class FormatError(ValueError):
    """The answer does not follow the AIMessage format; the message says what to fix."""


def fallback(content: str) -> dict[str, Any]:
    return {"preText": f"{FALLBACK_PREFIX}: {content}"}


def _optional(data: dict[str, Any], key: str, kind: type, what: str) -> Any:
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        raise FormatError(f"`{key}` must be {what}")
    return value


def _commands(data: dict[str, Any], key: str) -> list[dict[str, Any]] | None:
    raw = data.get(key)
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(c, dict) for c in raw):
        raise FormatError(f"`{key}` must be a list of commands")
    commands = []
    for n, command in enumerate(raw):
        if not isinstance(command.get("type"), str) or not command["type"]:
            raise FormatError(f"`{key}[{n}].type` must be a non-empty string")
        params = command.get("params", {})
        if not isinstance(params, dict):
            raise FormatError(f"`{key}[{n}].params` must be an object")
        commands.append(make_command(command["type"], params, bool(command.get("isRelative", False))).to_dict())
    return commands or None


def communication_module(raw: Any) -> dict[str, Any] | None:
    """The module if it is a known type with valid data; None for unknown types."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise FormatError("`communicationModule` must be an object with `type` and `data`")
    data = raw.get("data")
    kind = raw.get("type")
    if kind == "MultipleChoice":
        options = data.get("options") if isinstance(data, dict) else None
        question = data.get("question") if isinstance(data, dict) else None
        if not isinstance(question, str) or not question.strip():
            raise FormatError("MultipleChoice needs a non-empty `data.question`")
        if not isinstance(options, list) or len(options) < 2 or not all(isinstance(o, str) and o for o in options):
            raise FormatError("MultipleChoice needs `data.options`: at least 2 non-empty strings")
        return {"type": kind, "data": {"question": question, "options": options}}
    if kind == "Validation":
        message = data.get("message") if isinstance(data, dict) else None
        if not isinstance(message, str) or not message.strip():
            raise FormatError("Validation needs a non-empty `data.message`")
        return {"type": kind, "data": {"message": message}}
    return None


def parse(content: str, *, automation: bool = False) -> dict[str, Any]:
    """The AIMessage in ``content``, normalised; FormatError says what is wrong otherwise. In an
    ``automation`` a communication module is ignored (seed section 6), even a malformed one: it
    never costs a format error."""
    fenced = _FENCE.match(content)
    try:
        data = json.loads(fenced.group(1) if fenced else content)
    except json.JSONDecodeError as exc:
        raise FormatError(f"the answer is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
    if not isinstance(data, dict):
        raise FormatError("the answer must be a JSON object")
    pre_text = data.get("preText")
    if not isinstance(pre_text, str):
        raise FormatError("`preText` is required and must be a string")
    data_commands = _commands(data, "dataCommands")
    action_commands = _commands(data, "actionCommands")
    if data_commands and action_commands:
        raise FormatError("`dataCommands` and `actionCommands` are exclusive: send one or the other")
    message: dict[str, Any] = {
        "preText": pre_text,
        "validationRequest": _optional(data, "validationRequest", bool, "true or false"),
        "dataCommands": data_commands,
        "actionCommands": action_commands,
        "postText": _optional(data, "postText", str, "a string"),
        "keepControl": _optional(data, "keepControl", bool, "true or false"),
        "communicationModule": None if automation else communication_module(data.get("communicationModule")),
        "completed": _optional(data, "completed", bool, "true or false"),
    }
    return {key: value for key, value in message.items() if value is not None}
