"""Parsing a model's answer into AIMessage: what passes, what is a format error, what is dropped."""

from __future__ import annotations

import json

import pytest

from sessions import parsing


def parse(**message) -> dict:
    return parsing.parse(json.dumps(message))


def test_a_plain_answer():
    assert parse(preText="Hello") == {"preText": "Hello"}


def test_fenced_json_is_accepted():
    assert parsing.parse('```json\n{"preText": "hi"}\n```') == {"preText": "hi"}


def test_commands_get_deterministic_ids():
    first = parse(preText="x", dataCommands=[{"type": "JOBS", "params": {"status": "failed"}}])
    again = parse(preText="y", dataCommands=[{"type": "JOBS", "params": {"status": "failed"}}])
    assert first["dataCommands"][0]["id"] == again["dataCommands"][0]["id"]
    assert first["dataCommands"][0]["params"] == {"status": "failed"}


def test_tool_ids_keep_their_case():
    message = parse(preText="x", actionCommands=[{"type": "mcp__chrome-devtools__take_snapshot", "params": {}}])
    assert message["actionCommands"][0]["type"] == "mcp__chrome-devtools__take_snapshot"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("Sure, here it is", "not JSON"),
        ("[1, 2]", "JSON object"),
        ('{"text": "no preText"}', "preText"),
        ('{"preText": 3}', "preText"),
        ('{"preText": "x", "dataCommands": [{"type": "JOBS"}], "actionCommands": [{"type": "t"}]}', "exclusive"),
        ('{"preText": "x", "dataCommands": "JOBS"}', "list of commands"),
        ('{"preText": "x", "dataCommands": [{"params": {}}]}', "type"),
        ('{"preText": "x", "keepControl": "yes"}', "keepControl"),
        (
            '{"preText": "x", "communicationModule": {"type": "MultipleChoice", '
            '"data": {"question": "?", "options": ["a"]}}}',
            "at least 2",
        ),
        ('{"preText": "x", "communicationModule": {"type": "Validation", "data": {}}}', "message"),
    ],
)
def test_format_errors_say_what_to_fix(content, fragment):
    with pytest.raises(parsing.FormatError, match=fragment):
        parsing.parse(content)


def test_an_unknown_communication_module_is_dropped():
    message = parse(preText="x", communicationModule={"type": "Slider", "data": {"min": 0}})
    assert "communicationModule" not in message


def test_valid_modules_keep_their_data():
    choice = {"type": "MultipleChoice", "data": {"question": "Which?", "options": ["a", "b"]}}
    assert parse(preText="x", communicationModule=choice)["communicationModule"] == choice


def test_the_fallback_keeps_the_raw_text():
    assert parsing.fallback("garbage") == {"preText": "ai_response_invalid_format: garbage"}
