"""Hosted sessions: the server calls the model itself for automations that name a provider."""

from __future__ import annotations

import os
from typing import Any

from governance.principals import Principal
from sessions import prompt
from sessions.machine import Event, Phase
from sessions.models import AISession
from sessions.processor import apply_event
from sessions.providers.registry import get_provider


def provider_config(stored: dict[str, Any]) -> dict[str, Any]:
    """The stored config with `api_key_env` resolved: keys live in the environment, not in rows."""
    config = dict(stored)
    env_name = config.pop("api_key_env", None)
    if env_name:
        config["api_key"] = os.environ.get(env_name, "")
    return config


def call_provider(session_id: str, *, actor: Principal) -> str:
    """Query the automation's provider (outside any transaction: it may take two minutes), then
    report the answer as the agent would: AIResponseReceived, NetworkErrorOccurred (retried
    every 30 s in AUTOMATION) or SystemErrorOccurred (the session ends with ERROR)."""
    session = AISession.objects.select_related("automation", "agent__active_manifest").get(pk=session_id)
    if not session.is_active or session.phase != Phase.CALLING_AI or not session.automation_id:
        return "skipped"
    automation = session.automation
    data, _ = prompt.build(session)
    response = get_provider(automation.provider).query(data, provider_config(automation.provider_config))
    if response.success:
        tokens = {
            "input": response.input_tokens,
            "output": response.output_tokens,
            "cacheWrite": response.cache_write_tokens,
            "cacheRead": response.cache_read_tokens,
        }
        apply_event(
            session.pk, Event.AI_RESPONSE_RECEIVED, {"content": response.content, "tokens": tokens}, actor=actor
        )
        return "answered"
    kind = Event.NETWORK_ERROR_OCCURRED if response.network_error else Event.SYSTEM_ERROR_OCCURRED
    apply_event(session.pk, kind, {"summary": response.error_message or "provider error"}, actor=actor)
    return kind.value


def simulate_actions(session_id: str, *, actor: Principal) -> str:
    """Report the last AI message's actions as done, for scripted automations that ask for it:
    there is no agent behind a demo automation to run them. Results say they were simulated."""
    session = AISession.objects.get(pk=session_id)
    if not session.is_active or session.phase != Phase.EXECUTING_ACTIONS:
        return "skipped"
    last = session.messages.filter(sender="AI", ai_message__isnull=False).order_by("-seq").first()
    commands = (last.ai_message or {}).get("actionCommands", []) if last else []
    results = [
        {"commandId": command["id"], "status": "SUCCESS", "summary": f"simulated {command['type']} (scripted demo)"}
        for command in commands
    ]
    apply_event(session.pk, Event.ACTIONS_EXECUTED, {"results": results}, actor=actor)
    return "simulated"
