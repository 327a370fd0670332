"""Hosted sessions: the server calls the model itself for automations that name a provider profile.

Where the call goes, which model and which key all come from the operator's profile, read at
call time, never from the automation row or anything an agent sent. What comes back on failure
is split: the agent's session gets the category and the HTTP status only (a provider's error
body can carry an internal service's answer or an echoed key); the full detail, scrubbed of the
secret, goes to the server log.
"""

from __future__ import annotations

import logging
import time
from datetime import timedelta
from typing import Any

from django.db import DatabaseError, transaction
from django.db.models import Max
from django.utils import timezone

from governance.kernel.exceptions import Conflict, RateLimited
from governance.kernel.principals import Principal
from sessions import prompt
from sessions.machine import MAX_NETWORK_RETRY_DELAY, Event, Phase
from sessions.models import AISession, ProviderCall, ProviderProfile
from sessions.processor import apply_event
from sessions.providers.base import AIResponse, ErrorCategory, PromptData
from sessions.providers.options import option_errors
from sessions.providers.registry import get_provider

logger = logging.getLogger(__name__)

# The hosted call's hard time limit (sessions.tasks.call_provider). A call started longer ago than
# this has surely lost its worker: only then is it made again. The provider's own timeout (two
# minutes, at most MAX_TIMEOUT_SECONDS) ends every call before the soft limit.
CALL_TIME_LIMIT = 240
CALL_LEASE = timedelta(seconds=CALL_TIME_LIMIT)
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
        name = profile.secret_name
        if profile.secret_status == "not allowed":
            return _unusable(profile, f"the secret variable {name} may not be sent: name a PROVIDER_KEY_* variable")
        return _unusable(profile, f"the secret variable {name} (or {name}_FILE in CREDENTIALS_DIR) is not set")
    return get_provider(profile.provider).query(data, provider_config(profile, secret))


def _still_allowed(session: AISession, profile: ProviderProfile) -> bool:
    """An automation an agent made stays on the profiles its manifest lists *now*: an operator who
    takes a profile out of the manifest stops its calls, not only the next automations."""
    if not session.automation.created_by.startswith("agent:"):
        return True  # an operator's choice, any enabled profile
    manifest = session.agent.active_manifest
    return manifest is not None and profile.name in (manifest.document.get("provider_profiles") or [])


def call_provider(session_id: str, *, actor: Principal) -> str:
    """Ask the automation's model for the session's turn and report the answer as the agent
    would: AIResponseReceived, NetworkErrorOccurred (retried in AUTOMATION, after the provider's
    Retry-After when it gave one) or SystemErrorOccurred (the session ends with ERROR).

    Exactly once per turn (ProviderCall): the call is claimed first, made outside any transaction
    (it may take two minutes), and its answer stored before it is applied. An answer that asks a
    reviewer past the agent's pending limit is "held": applied when the phase's deadline hands the
    turn to a worker again, instead of ending the session."""
    claim = _claim(session_id)
    if isinstance(claim, str):
        return claim
    session, call = claim
    if call.status != ProviderCall.Status.ANSWERED:
        started = time.monotonic()
        response = _ask(session, session.automation.profile)
        duration_ms = round((time.monotonic() - started) * 1000)
        if not response.success:
            kind = Event.NETWORK_ERROR_OCCURRED if response.network_error else Event.SYSTEM_ERROR_OCCURRED
            payload: dict[str, Any] = {"summary": response.public_summary}
            if response.network_error and response.retry_after is not None:
                # The provider's header, not an agent's input: cut to the longest a session waits anyway.
                payload["retryAfter"] = min(response.retry_after, int(MAX_NETWORK_RETRY_DELAY.total_seconds()))
            _finish(call, status=ProviderCall.Status.FAILED, error=response.public_summary)
            apply_event(session.pk, kind, payload, actor=actor)
            return kind.value
        call.content, call.tokens = response.content, _tokens(response)
        call.metadata = execution_metadata(call, response, duration_ms=duration_ms)
        try:
            stored = _finish(
                call,
                status=ProviderCall.Status.ANSWERED,
                content=call.content,
                tokens=call.tokens,
                metadata=call.metadata,
            )
        except DatabaseError as exc:
            return _unstorable(session, call, exc, actor=actor)
        if not stored:
            return "superseded"  # its worker was taken for gone and the call made again
    try:
        answer = {"content": call.content, "tokens": call.tokens, "metadata": call.metadata}
        apply_event(session.pk, Event.AI_RESPONSE_RECEIVED, answer, actor=actor)
    except Conflict:
        raise  # the session moved on meanwhile: the task drops the answer
    except RateLimited as exc:
        # The answer asks a reviewer, and the agent's pending limit is full: nothing was opened or
        # stored. The answer stays kept and the session in CALLING_AI; the phase's deadline hands
        # the turn to a worker again, which applies this same answer, the model not asked again.
        logger.info("[hosted] answer held: session=%s reason=%s", session.pk, exc.detail)
        return "held"
    except Exception as exc:
        return _unstorable(session, call, exc, actor=actor)
    return "answered"


def _claim(session_id: str) -> tuple[AISession, ProviderCall] | str:
    """The session's current turn, claimed for this task: a new attempt, or the answer a dead
    worker already stored. "skipped" when there is nothing to call (the session moved on, or it
    is not hosted); "in flight" when another task is calling for this turn right now."""
    now = timezone.now()
    with transaction.atomic():
        session = (
            AISession.objects.select_for_update(of=("self",))
            .select_related("automation__profile", "agent__active_manifest")
            .filter(pk=session_id)
            .first()
        )
        if session is None or not session.is_active or session.phase != Phase.CALLING_AI:
            return "skipped"
        if not session.automation_id or session.automation.profile is None:
            return "skipped"
        turn = session.messages.aggregate(last=Max("seq"))["last"] or 0
        call, created = ProviderCall.objects.get_or_create(
            session=session, turn=turn, defaults={"profile": session.automation.profile, "started_at": now}
        )
        if not created and call.status == ProviderCall.Status.ANSWERED:
            return session, call
        if not created and call.status == ProviderCall.Status.CALLING and now - call.started_at < CALL_LEASE:
            logger.info("[hosted] call already in flight: session=%s turn=%s", session.pk, turn)
            return "in flight"
        call.status, call.attempts, call.started_at, call.finished_at = (
            ProviderCall.Status.CALLING,
            call.attempts + 1,
            now,
            None,
        )
        call.profile = session.automation.profile
        call.save(update_fields=["status", "attempts", "started_at", "finished_at", "profile"])
    return session, call


def _ask(session: AISession, profile: ProviderProfile) -> AIResponse:
    data, _ = prompt.build(session)
    if not _still_allowed(session, profile):
        why = f"the active manifest of {session.agent.agent_id} no longer lists this profile"
        return _unusable(profile, why)
    return query(profile, data)


def _finish(call: ProviderCall, **fields: Any) -> bool:
    """Record the attempt's end, unless another task has made the call again meanwhile."""
    with transaction.atomic():  # a refused value (a NUL byte) rolls back this write alone
        updated = ProviderCall.objects.filter(pk=call.pk, attempts=call.attempts).update(
            finished_at=timezone.now(), **fields
        )
    return updated == 1


def execution_metadata(call: ProviderCall, response: AIResponse, *, duration_ms: int) -> dict[str, Any]:
    """The AI message's executionMetadata (seed 003: automations only): who answered (provider,
    profile, the model as the provider names it), its id of the answer (``providerSessionId``, also
    kept on the session), why it stopped, the tokens, how long the call took (``durationMs``, and
    the provider's own ``providerDurationMs`` when it reports one), and which attempt of which
    turn it was. Stored with the answer, so a redelivered task applies the same figures."""
    profile = call.profile  # the one asked, set when the call was claimed
    metadata: dict[str, Any] = {
        "provider": profile.provider if profile else "",
        "profile": profile.name if profile else "",
        "model": response.model or (profile.model if profile else ""),
        "tokens": _tokens(response),
        "tokensUsed": response.tokens_used,
        "durationMs": duration_ms,
        "attempt": call.attempts,
        "turn": call.turn,
    }
    if response.response_id:
        metadata["providerSessionId"] = response.response_id
    if response.stop_reason:
        metadata["stopReason"] = response.stop_reason
    if response.provider_duration_ms is not None:
        metadata["providerDurationMs"] = response.provider_duration_ms
    return metadata


def _tokens(response: AIResponse) -> dict[str, int]:
    return {
        "input": response.input_tokens,
        "output": response.output_tokens,
        "cacheWrite": response.cache_write_tokens,
        "cacheRead": response.cache_read_tokens,
    }


def _unstorable(session: AISession, call: ProviderCall, exc: Exception, *, actor: Principal) -> str:
    """An answer the platform cannot store (a NUL byte PostgreSQL refuses, say) ends the turn
    instead of leaving the session in CALLING_AI for ever."""
    logger.error("[hosted] the answer of session %s could not be recorded: %r", session.pk, exc)
    summary = f"AI provider error: {ErrorCategory.INVALID_RESPONSE} ({type(exc).__name__})"
    ProviderCall.objects.filter(pk=call.pk).update(status=ProviderCall.Status.FAILED, content="", error=summary)
    apply_event(session.pk, Event.SYSTEM_ERROR_OCCURRED, {"summary": summary}, actor=actor)
    return Event.SYSTEM_ERROR_OCCURRED.value


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
