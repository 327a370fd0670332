"""Hosted sessions: the server calls the model itself for automations that name a provider profile.

Where the call goes, which model and which key all come from the operator's profile, read at
call time, never from the automation row or anything an agent sent. What comes back on failure
is split: the agent's session gets the category and the HTTP status only (a provider's error
body can carry an internal service's answer or an echoed key); the full detail, scrubbed of the
secret, goes to the server log.
"""

from __future__ import annotations

import logging
from typing import Any

from governance.exceptions import Conflict
from governance.principals import Principal
from sessions import prompt
from sessions.machine import Event, Phase
from sessions.models import AISession, ProviderProfile
from sessions.processor import apply_event
from sessions.providers.base import AIResponse, ErrorCategory, PromptData
from sessions.providers.options import option_errors
from sessions.providers.registry import get_provider

logger = logging.getLogger(__name__)

SIMULATED_SUMMARY = "SIMULATED by the scripted demo provider, nothing was run: {type}"


def provider_config(profile: ProviderProfile, secret: str) -> dict[str, Any]:
    """The provider's config: the profile's options first, then its own columns on top, so no
    option can ever stand in for the URL, the key or the internal flag."""
    config: dict[str, Any] = dict(profile.options)
    config.update(model=profile.model, base_url=profile.effective_base_url, internal=profile.internal)
    config.pop("api_key", None)
    if secret:
        config["api_key"] = secret
    return config


def _unusable(profile: ProviderProfile, why: str) -> AIResponse:
    logger.warning("AI provider profile %r not usable: %s", profile.name, why)
    return AIResponse(success=False, error_category=ErrorCategory.CONFIGURATION, error_detail=why)


def query(profile: ProviderProfile, data: PromptData) -> AIResponse:
    """Ask the profile's model, after checking again what may have changed since it was saved
    (switched off, its secret unset, its row edited by hand); the URL is checked by the provider's
    HTTP call itself, right before connecting."""
    if not profile.enabled:
        return _unusable(profile, "the profile is disabled")
    problems = option_errors(profile.provider, profile.options)
    if problems:
        return _unusable(profile, "; ".join(message for _key, message in problems))
    secret = profile.secret_value()
    if profile.secret_name and not secret:
        return _unusable(
            profile, f"the secret variable {profile.secret_name} (or {profile.secret_name}_FILE) is not set"
        )
    return get_provider(profile.provider).query(data, provider_config(profile, secret))


def _still_allowed(session: AISession, profile: ProviderProfile) -> bool:
    """An automation an agent made stays on the profiles its manifest lists *now*: an operator who
    takes a profile out of the manifest stops its calls, not only the next automations."""
    if not session.automation.created_by.startswith("agent:"):
        return True  # an operator's choice, any enabled profile
    manifest = session.agent.active_manifest
    return manifest is not None and profile.name in (manifest.document.get("provider_profiles") or [])


def call_provider(session_id: str, *, actor: Principal) -> str:
    """Query the automation's provider (outside any transaction: it may take two minutes), then
    report the answer as the agent would: AIResponseReceived, NetworkErrorOccurred (retried
    every 30 s in AUTOMATION) or SystemErrorOccurred (the session ends with ERROR)."""
    session = AISession.objects.select_related("automation__profile", "agent__active_manifest").get(pk=session_id)
    if not session.is_active or session.phase != Phase.CALLING_AI or not session.automation_id:
        return "skipped"
    profile = session.automation.profile
    if profile is None:
        return "skipped"
    data, _ = prompt.build(session)
    response = (
        query(profile, data)
        if _still_allowed(session, profile)
        else _unusable(profile, f"the active manifest of {session.agent.agent_id} no longer lists this profile")
    )
    if response.success:
        tokens = {
            "input": response.input_tokens,
            "output": response.output_tokens,
            "cacheWrite": response.cache_write_tokens,
            "cacheRead": response.cache_read_tokens,
        }
        try:
            apply_event(
                session.pk, Event.AI_RESPONSE_RECEIVED, {"content": response.content, "tokens": tokens}, actor=actor
            )
        except Conflict:
            raise  # the session moved on meanwhile: the task drops the answer
        except Exception as exc:
            # An answer the platform cannot store (a NUL byte PostgreSQL refuses, say) must end the
            # turn, not leave the session in CALLING_AI for ever.
            logger.exception("[hosted] the answer of session %s could not be recorded", session.pk)
            summary = f"AI provider error: {ErrorCategory.INVALID_RESPONSE} ({type(exc).__name__})"
            apply_event(session.pk, Event.SYSTEM_ERROR_OCCURRED, {"summary": summary}, actor=actor)
            return Event.SYSTEM_ERROR_OCCURRED.value
        return "answered"
    kind = Event.NETWORK_ERROR_OCCURRED if response.network_error else Event.SYSTEM_ERROR_OCCURRED
    apply_event(session.pk, kind, {"summary": response.public_summary}, actor=actor)
    return kind.value


def simulate_actions(session_id: str, *, actor: Principal) -> str:
    """Report the last AI message's actions as done, for scripted automations that ask for it:
    there is no agent behind a demo automation to run them. Each result is marked
    ``"simulated": true`` and its summary says so: nobody may mistake it for a real outcome."""
    session = AISession.objects.select_related("automation__profile").get(pk=session_id)
    if not session.is_active or session.phase != Phase.EXECUTING_ACTIONS or not _simulates(session):
        return "skipped"
    last = session.messages.filter(sender="AI", ai_message__isnull=False).order_by("-seq").first()
    commands = (last.ai_message or {}).get("actionCommands", []) if last else []
    # Exactly once: an action already recorded (before a suspension, say) is not simulated again.
    recorded = set(session.action_results.values_list("command_id", flat=True))
    commands = [command for command in commands if command["id"] not in recorded]
    results = [
        {
            "commandId": command["id"],
            "status": "SUCCESS",
            "simulated": True,
            "summary": SIMULATED_SUMMARY.format(type=command["type"]),
        }
        for command in commands
    ]
    apply_event(session.pk, Event.ACTIONS_EXECUTED, {"results": results}, actor=actor)
    return "simulated"


def _simulates(session: AISession) -> bool:
    """Only a scripted profile (made by the server) may ask for simulated actions."""
    profile = session.automation.profile if session.automation_id else None
    return (
        profile is not None
        and profile.provider == ProviderProfile.Provider.SCRIPTED
        and bool(profile.options.get("simulate_actions"))
    )
