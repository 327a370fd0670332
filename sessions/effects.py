"""The effects of the session machine's transitions (``machine.EffectKind``), one function each:
what the processor carries out, in the event's transaction, for every effect a transition asks for
(store a message, call the model, open a review, arm a timer...). The processor keeps the run
(the locked session, the chain of events, what the chain already read) and dispatches through
``HANDLERS``; an effect reads and writes through the run it is handed."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.db.models import Max

from agents.models import ManifestTool
from agents.registry import manifest_document
from governance.kernel import dispatch, rows
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import InvalidInput
from governance.kernel.principals import SYSTEM
from governance.kernel.services import record
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from sessions import enrichments, executor, machine, parsing, validation
from sessions.commands import DataCommand
from sessions.machine import EffectKind, Event, EventInput, Phase, SessionType, SystemMessageType
from sessions.models import AISession, SessionMessage

if TYPE_CHECKING:
    from sessions.processor import Run

REVIEW_KINDS = {"validation": "session_validation", "communication": "session_communication"}
DECLINED = "The reviewer declined to answer."


def simulates_actions(session: AISession) -> bool:
    """A scripted demo automation whose actions the platform simulates (sessions/hosted.py)."""
    automation = session.automation if session.automation_id else None
    return bool(
        automation is not None
        and automation.provider == "scripted"
        and automation.provider_config.get("simulate_actions")
    )


def granted_tools(manifest_id: int | None) -> dict[str, validation.ToolPolicy]:
    """The tools an active manifest grants, as the validation levels read them (none without one)."""
    return {
        tool.tool_id: validation.ToolPolicy(tool.permission, tool.requires_approval)
        for tool in ManifestTool.objects.filter(manifest_id=manifest_id)
    }


def action_id(message: SessionMessage, n: int) -> str:
    """The stable id of the AI message's n-th action: the same on every parse of that message,
    distinct from every other action of every session (the message id is a UUID)."""
    return f"act-{message.pk.hex}-{n}"


def store_user_message(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    payload = event.payload
    segments = payload.get("segments") or [{"type": "text", "text": payload.get("text", "")}]
    try:
        rich = enrichments.rich_message(
            segments,
            is_relative=run.session.type == SessionType.AUTOMATION,
            now=run.now,
            day_start_hour=settings.SESSION_DAY_START_HOUR,
            week_start_day=settings.SESSION_WEEK_START_DAY,
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(
            f"invalid message: {exc}",
            errors=[{"loc": ["body", "payload", "segments"], "msg": str(exc), "type": "invalid_segment"}],
        ) from exc
    run.add("USER", rich_content=rich)
    run.user_commands = rich.get("dataCommands", [])


def execute_enrichments(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    """The enrichments of the user's latest message(s): the one just stored, or, when an
    AUTOMATION starts, the messages copied from its SEED."""
    if run.user_commands is None and run.commands_at_start is not None:
        run.user_commands = run.commands_at_start
    if run.user_commands is None:
        last_other = run.session.messages.exclude(sender="USER").aggregate(last=Max("seq"))["last"] or 0
        user_messages = run.session.messages.filter(sender="USER", seq__gt=last_other, rich_content__isnull=False)
        run.user_commands = [c for m in user_messages for c in m.rich_content.get("dataCommands", [])]
    commands = [DataCommand.from_dict(command) for command in run.user_commands]
    if commands:
        batch = _execute(run, commands)
        if batch.system_message:
            run.add_system(batch.system_message)
    run.follow(Event.ENRICHMENTS_EXECUTED)


def _execute(run: Run, commands: list[DataCommand]) -> executor.CommandBatch:
    return executor.execute(
        commands,
        agent=run.session.agent,
        now=run.now,
        day_start_hour=settings.SESSION_DAY_START_HOUR,
        week_start_day=settings.SESSION_WEEK_START_DAY,
    )


def call_ai(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    if run.session.automation_id and run.session.automation.provider:
        session_id = run.session.pk
        dispatch.after_commit("sessions.call_provider", str(session_id))


def store_ai_response(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    content = event.payload.get("content")
    if not isinstance(content, str):
        raise InvalidInput(
            "AIResponseReceived needs the model's answer as `content` (a string).",
            errors=[{"loc": ["body", "payload", "content"], "msg": "a string is required", "type": "missing"}],
        )
    tokens = dict(run.session.tokens_used or {})
    for key in ("input", "output", "cacheWrite", "cacheRead"):
        value = event.payload.get("tokens", {}).get(key, 0)
        tokens[key] = tokens.get(key, 0) + (value if isinstance(value, int) and value >= 0 else 0)
    run.session.tokens_used = tokens
    metadata = event.payload.get("metadata")
    provider_session = (metadata or {}).get("providerSessionId")
    if isinstance(provider_session, str) and provider_session:
        # The provider's side of the session (seed 003's providerSessionId): its latest answer.
        run.session.provider_session_id = provider_session[:200]
    run.add("AI", ai_message_json=content, execution_metadata=metadata)


def parse_response(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    message = cast("SessionMessage", run.last_ai())  # the answer STORE_AI_RESPONSE just stored
    content = cast("str", message.ai_message_json)
    try:
        parsed = parsing.parse(content, automation=run.session.type == SessionType.AUTOMATION)
    except parsing.FormatError as exc:
        _send_back(run, message, f"Format error: {exc}. Answer with the AIMessage JSON.")
        return
    actions = parsed.get("actionCommands") or []
    tools = granted_tools(run.session.agent.active_manifest_id) if actions else {}
    refused = validation.ungranted(actions, tools)
    if refused:
        # Only a manifest grants a tool, never a reviewer: no review item, nothing handed out.
        record(
            actor=SYSTEM,
            action=AuditAction.SESSION_ACTIONS_REFUSED,
            target=run.session,
            tools=refused,
            ai_message=str(message.pk),
            sent_by=run.actor.label,
        )
        _send_back(run, message, validation.refusal(refused))
        return
    for n, command in enumerate(actions, start=1):
        command["id"] = action_id(message, n)
    message.ai_message = parsed
    rows.update(message, ["ai_message"])  # parsed after it was stored
    decision = _resolve_validation(run, parsed, tools)
    run.follow(
        Event.AI_RESPONSE_PARSED,
        aiMessageId=str(message.pk),
        completed=parsed.get("completed", False),
        validationRequired=decision.required,
        validationContext=decision.context,
        communicationModule=parsed.get("communicationModule"),
        dataCommands=parsed.get("dataCommands"),
        actionCommands=parsed.get("actionCommands"),
    )


def _send_back(run: Run, message: SessionMessage, summary: str) -> None:
    """The answer is refused as a whole and goes back to the model as a FORMAT_ERROR (seed
    003 section 13): stored as the `ai_response_invalid_format` fallback, so none of its
    commands is ever run or handed out, and retried on the format error's path and limits."""
    message.ai_message = parsing.fallback(cast("str", message.ai_message_json))
    rows.update(message, ["ai_message"])  # parsed after it was stored
    run.follow(Event.PARSE_ERROR_OCCURRED, summary=summary)


def _resolve_validation(
    run: Run, parsed: dict[str, Any], tools: dict[str, validation.ToolPolicy]
) -> validation.Decision:
    if not parsed.get("actionCommands"):
        return validation.Decision(required=False, context={})  # only actions are ever validated
    agent = run.session.agent
    return validation.resolve(
        actions=parsed.get("actionCommands") or [],
        automation=run.session.type == SessionType.AUTOMATION,
        domain=agent.domain,
        session_requires=run.session.require_validation,
        ai_requests=bool(parsed.get("validationRequest")),
        policy=validation.Policy(
            app=settings.SESSION_VALIDATION_APP, domains=frozenset(settings.SESSION_VALIDATION_DOMAINS), tools=tools
        ),
    )


def _review_expiry(run: Run, actions: list[dict[str, Any]]) -> datetime:
    """REVIEW_EXPIRY_HOURS, or sooner when a tool of the request sets its own
    `approval_timeout_hours` in the manifest (the strictest tool wins)."""
    hours = [settings.REVIEW_EXPIRY_HOURS]
    manifest_id = run.session.agent.active_manifest_id
    if actions and manifest_id:
        tools = {tool["tool_id"]: tool for tool in manifest_document(manifest_id)["tools"]}
        for action in actions:
            tool = tools.get(str(action.get("params", {}).get("tool_id") or action["type"]), {})
            if tool.get("approval_timeout_hours"):
                hours.append(tool["approval_timeout_hours"])
    return run.now + timedelta(hours=min(hours))


def _open_review(run: Run, kind: str, title: str, payload: dict[str, Any]) -> int:
    """The session's request in the inbox, opened for its agent whoever drives the session, so it
    counts against the agent's pending limit; past it, RateLimited refuses the whole event (the
    answer that asked is not stored: the agent reports it again later, a hosted answer is held)."""
    last_ai = run.last_ai()
    item = reviews.open_item(
        actor=SYSTEM,
        kind=REVIEW_KINDS[kind],
        title=title,
        agent=run.session.agent,
        payload={
            "session": str(run.session.pk),
            "sessionName": run.session.name,
            "lastAiMessage": (last_ai.ai_message or {}).get("preText", "") if last_ai else "",
            **payload,
        },
        expires_at=_review_expiry(run, payload.get("actionCommands") or []),
    )
    return item.pk


def request_validation(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    context = event.payload["validationContext"]
    item_id = _open_review(
        run,
        "validation",
        f"{run.session.agent.agent_id} asks to run {len(event.payload['actionCommands'])} action(s)",
        {"validationContext": context, "actionCommands": event.payload["actionCommands"]},
    )
    # Before suspending, a trace that stays if nobody ever answers (seed section 12).
    fallback = run.add_system(
        {
            "type": SystemMessageType.ACTIONS_EXECUTED.value,
            "commandResults": [],
            "summary": "VALIDATION_CANCELLED: the actions were not approved.",
            "formattedData": None,
        },
        fallback_kind="VALIDATION_CANCELLED",
    )
    run.session.waiting_context = {
        **run.session.waiting_context,
        "cancelMessageId": str(fallback.pk),
        "reviewItemId": item_id,
    }


def request_communication(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    module = event.payload["communicationModule"]
    question = module["data"].get("question") or module["data"].get("message")
    item_id = _open_review(run, "communication", f"{run.session.agent.agent_id} asks: {question}", {"module": module})
    fallback = run.add(
        "AI",
        text_content="COMMUNICATION_CANCELLED: the question was not answered.",
        exclude_from_prompt=True,
        fallback_kind="COMMUNICATION_CANCELLED",
    )
    run.session.waiting_context = {
        **run.session.waiting_context,
        "cancelMessageId": str(fallback.pk),
        "reviewItemId": item_id,
    }


def remove_fallback(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    message_id = (before.waiting_context or {}).get("cancelMessageId")
    if message_id:
        SessionMessage.objects.filter(pk=message_id).update(removed_at=run.now)


def abandon_waiting(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    item_id = (before.waiting_context or {}).get("reviewItemId")
    if item_id:
        reviews.decide(
            item_id,
            actor=SYSTEM,
            decision=ReviewDecision.Decision.EXPIRE,
            comment="Withdrawn: the user sent a new message instead.",
            notify=False,
        )


def store_communication_response(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    response = event.payload.get("response")
    if response is None:
        raise InvalidInput(
            "CommunicationResponseReceived needs `response`.",
            errors=[{"loc": ["body", "payload", "response"], "msg": "required", "type": "missing"}],
        )
    run.add("USER", text_content=response if isinstance(response, str) else json.dumps(response))


def execute_data_queries(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    commands = [DataCommand.from_dict(c) for c in (run.last_ai().ai_message or {}).get("dataCommands", [])]
    batch = _execute(run, commands)
    if batch.system_message:
        run.add_system(batch.system_message)
    if batch.delegated:
        # Not the platform's data: the agent runs these and posts DataQueriesExecuted.
        run.session.waiting_context = {
            "type": "DelegatedQueries",
            "commands": [c.to_dict() for c in batch.delegated],
        }
    else:
        run.follow(Event.DATA_QUERIES_EXECUTED)


def execute_actions(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    """Actions run on the agent's side: the next action tells it which. A hosted scripted
    automation (demos, tests) may ask the platform to simulate them instead."""
    if simulates_actions(run.session):
        session_id = str(run.session.pk)
        dispatch.after_commit("sessions.simulate_actions", session_id)


def record_results(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    if run.action_message is not None:  # actions: what ActionResult holds, recorded once
        run.add_system(run.action_message)
        run.action_message = None
        return
    results = event.payload.get("results")
    if not results:
        return
    last = run.last_ai()
    ai = (last.ai_message or {}) if last else {}
    kind = "DATA_ADDED" if event.type == Event.DATA_QUERIES_EXECUTED else "ACTIONS_EXECUTED"
    commands = ai.get("dataCommands" if kind == "DATA_ADDED" else "actionCommands") or []
    run.add_system(executor.record_agent_results(commands, results, kind=kind))


def post_text(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    last = run.last_ai()
    post_text = (last.ai_message or {}).get("postText") if last else None
    if post_text:
        run.add("AI", text_content=post_text, exclude_from_prompt=True)


def system_message(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    run.add_system({"type": data["type"], "commandResults": [], "summary": data["summary"], "formattedData": None})


def check_completion(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    """The model said ``completed`` while its answer still asks for work (data queries or
    actions): ending now would drop that work unseen, so the platform rejects the claim and
    the model is told why."""
    pending = [key for key in ("dataCommands", "actionCommands") if event.payload.get(key)]
    if pending:
        reason = (
            f"Completion rejected: the same answer still asks for {' and '.join(pending)}. "
            "Run the work first (send it without `completed`), then say `completed: true` alone."
        )
        run.follow(Event.COMPLETION_REJECTED, reason=reason)


def retry(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    run.follow(Event.RETRY_SCHEDULED)


def schedule(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    session_id, at, fires = str(run.session.pk), run.session.timer_at, run.session.timer_event
    dispatch.after_commit("sessions.fire_timer", session_id, fires, at.isoformat(), eta=at)


def resume(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    """Pick up transparently where the session stopped (no system message: seed section 6);
    a session back from a suspension is recorded in the audit trail (not in its messages)."""
    if before.end_reason == machine.EndReason.SUSPENDED:
        record(
            actor=SYSTEM,
            action=AuditAction.SESSION_RESUMED,
            target=run.session,
            type=run.session.type,
            phase=run.session.phase,
            reason="slot freed",
        )
    steps = {
        Phase.EXECUTING_ENRICHMENTS: execute_enrichments,
        Phase.CALLING_AI: call_ai,
        Phase.PARSING_AI_RESPONSE: parse_response,
        Phase.EXECUTING_DATA_QUERIES: execute_data_queries,
        Phase.EXECUTING_ACTIONS: _ask_action_outcomes,
        Phase.RETRYING_AFTER_FORMAT_ERROR: retry,
        Phase.RETRYING_AFTER_ACTION_FAILURE: retry,
    }
    step = steps.get(Phase(run.session.phase))
    if step is not None:
        step(run, before, event, data)
    elif before.phase in (Phase.WAITING_VALIDATION, Phase.WAITING_COMMUNICATION_RESPONSE):
        _catch_up_on_review(run, before)


def _ask_action_outcomes(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    """Resumed while its actions were running: they may have run, so they are never handed
    out again. The agent is asked what became of the ones without a recorded result; a
    scripted demo simulates those (and only those) again."""
    if simulates_actions(run.session):
        execute_actions(run, before, event, data)
        return
    last = run.last_ai()
    commands = (last.ai_message or {}).get("actionCommands") or [] if last else []
    recorded = set(run.session.action_results.values_list("command_id", flat=True))
    pending = [command["id"] for command in commands if command["id"] not in recorded]
    run.session.waiting_context = {"type": "ActionOutcomes", "commandIds": pending}


def _catch_up_on_review(run: Run, before: machine.State) -> None:
    """A reviewer may have decided while the session was suspended: apply it now."""
    item = ReviewItem.objects.filter(pk=(before.waiting_context or {}).get("reviewItemId")).first()
    if item is None or item.status == ReviewItem.Status.PENDING:
        return
    if before.phase == Phase.WAITING_VALIDATION:
        run.follow(Event.VALIDATION_RECEIVED, approved=item.status == ReviewItem.Status.APPROVED)
    else:
        answer = getattr(getattr(item, "decision", None), "answer", None)
        run.follow(Event.COMMUNICATION_RESPONSE_RECEIVED, response=answer if answer is not None else DECLINED)


def session_released(run: Run, before: machine.State, event: EventInput, data: dict[str, Any]) -> None:
    if data.get("requeue"):
        # Its agent did not report in time: back of the queue, and not before the seed's
        # 30-second network retry delay, so a dead agent does not take its slot straight back.
        run.session.queued_at = run.now + machine.NETWORK_RETRY_DELAY
    agent_id = run.session.agent_id
    dispatch.after_commit("sessions.tick_agent", agent_id)


# Every effect a transition may ask for, and the function that carries it out
# (tests/sessions/test_effects.py checks that each kind has exactly one).
EffectHandler = Callable[["Run", machine.State, EventInput, dict[str, Any]], None]
HANDLERS: dict[EffectKind, EffectHandler] = {
    EffectKind.ABANDON_WAITING: abandon_waiting,
    EffectKind.CALL_AI: call_ai,
    EffectKind.CHECK_COMPLETION: check_completion,
    EffectKind.EXECUTE_ACTIONS: execute_actions,
    EffectKind.EXECUTE_DATA_QUERIES: execute_data_queries,
    EffectKind.EXECUTE_ENRICHMENTS: execute_enrichments,
    EffectKind.PARSE_RESPONSE: parse_response,
    EffectKind.POST_TEXT: post_text,
    EffectKind.RECORD_RESULTS: record_results,
    EffectKind.REMOVE_FALLBACK: remove_fallback,
    EffectKind.REQUEST_COMMUNICATION: request_communication,
    EffectKind.REQUEST_VALIDATION: request_validation,
    EffectKind.RESUME: resume,
    EffectKind.RETRY: retry,
    EffectKind.SCHEDULE: schedule,
    EffectKind.SESSION_RELEASED: session_released,
    EffectKind.STORE_AI_RESPONSE: store_ai_response,
    EffectKind.STORE_COMMUNICATION_RESPONSE: store_communication_response,
    EffectKind.STORE_USER_MESSAGE: store_user_message,
    EffectKind.SYSTEM_MESSAGE: system_message,
}
