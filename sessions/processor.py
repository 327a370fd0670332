"""The event processor (seed 003's AIEventProcessor): applies an event to a session in one
transaction, carries out the machine's effects (messages, commands, review requests, timers),
follows the events the server raises itself, and tells the agent what to do next.

The session row is locked (SELECT ... FOR UPDATE) for the whole chain, so concurrent events on
one session are applied one after the other, never interleaved.
"""

from __future__ import annotations

import functools
import json
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Max, Model
from django.utils import timezone
from pydantic import ValidationError

from agents.models import Agent, ManifestTool
from agents.registry import manifest_document
from governance.kernel import dispatch, metrics, rows
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Conflict, Forbidden, InvalidInput
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from governance.reviews import services as reviews
from governance.reviews.models import ReviewDecision, ReviewItem
from sessions import enrichments, executor, machine, parsing, validation
from sessions import limits as session_limits
from sessions.commands import DataCommand, system_message
from sessions.machine import EffectKind, Event, EventInput, Phase, SessionType, SystemMessageType
from sessions.models import ActionResult, AISession, Automation, ProviderProfile, SessionMessage
from sessions.schemas import EVENT_PAYLOADS

logger = logging.getLogger(__name__)

# The number of the session's last message (0 before the first), as raw SQL: every event that
# adds a message reads it, and the ORM's aggregate cost more to compile than to run.
_LAST_SEQ_SQL = (
    f"SELECT coalesce(max(seq), 0) FROM {connection.ops.quote_name(SessionMessage._meta.db_table)}"
    " WHERE session_id = %s"
)

MAX_CHAIN = 50  # events the server may raise itself in one go; more means a loop
REVIEW_KINDS = {"validation": "session_validation", "communication": "session_communication"}
DECLINED = "The reviewer declined to answer."


def to_state(session: AISession) -> machine.State:
    return machine.State(
        session_type=SessionType(session.type),
        phase=Phase(session.phase),
        total_roundtrips=session.total_roundtrips,
        last_event_time=session.last_event_time,
        last_user_interaction_time=session.last_user_interaction_time,
        waiting_context=session.waiting_context,
        is_active=session.is_active,
        end_reason=machine.EndReason(session.end_reason) if session.end_reason else None,
        pending_end_reason=machine.EndReason(session.pending_end_reason) if session.pending_end_reason else None,
        timer_at=session.timer_at,
        timer_event=Event(session.timer_event) if session.timer_event else None,
        deadline_at=session.phase_deadline_at,
        hosted_calls=_hosted(session),
        hosted_actions=_simulates_actions(session),
    )


def _hosted(session: AISession) -> bool:
    """The server calls the model (an automation with a provider profile)."""
    return bool(session.automation_id and session.automation.provider)


def _simulates_actions(session: AISession) -> bool:
    """A scripted demo automation whose actions the platform simulates (sessions/hosted.py)."""
    automation = session.automation if session.automation_id else None
    return bool(
        automation is not None
        and automation.provider == "scripted"
        and automation.provider_config.get("simulate_actions")
    )


SAVED_FIELDS = [
    "phase",
    "total_roundtrips",
    "last_event_time",
    "last_user_interaction_time",
    "waiting_context",
    "is_active",
    "end_reason",
    "pending_end_reason",
    "timer_at",
    "timer_event",
    "tokens_used",
    "last_activity",
    "phase_deadline_at",
    "queued_at",
    "provider_session_id",
]


def _store_state(session: AISession, state: machine.State) -> None:
    session.phase = state.phase.value
    session.total_roundtrips = state.total_roundtrips
    session.last_event_time = state.last_event_time
    session.last_user_interaction_time = state.last_user_interaction_time
    session.waiting_context = state.waiting_context
    session.is_active = state.is_active
    session.end_reason = state.end_reason.value if state.end_reason else None
    session.pending_end_reason = state.pending_end_reason.value if state.pending_end_reason else None
    session.timer_at = state.timer_at
    session.timer_event = state.timer_event.value if state.timer_event else ""
    session.phase_deadline_at = state.deadline_at


def _time_in_phase(before: machine.State, event: EventInput) -> None:
    """The time since the session's previous event was spent in the phase it was in: one sample
    per event, so the samples of a phase add up to all the time sessions spent in it."""
    if before.last_event_time is not None:
        seconds = max(0.0, (event.at - before.last_event_time).total_seconds())
        metrics.observe_on_commit(metrics.SESSION_PHASE_SECONDS, seconds, before.phase.value)


@dataclass
class Outcome:
    session: AISession
    next: dict[str, Any]


@dataclass
class _Run:
    """One chain of events on one locked session."""

    session: AISession
    actor: Principal
    now: datetime
    queue: deque[EventInput] = field(default_factory=deque)
    # What this chain already knows, so each event costs as few statements as it can.
    _seq: int | None = None
    _ai: SessionMessage | None = None
    _user_commands: list[dict[str, Any]] | None = None
    _action_message: dict[str, Any] | None = None  # ACTIONS_EXECUTED as recorded (ActionResult rows)
    # The user's commands as the session stood when the chain began (read for a batch of
    # activations at once); good only until the chain adds a message.
    _commands_at_start: list[dict[str, Any]] | None = None

    # --- driving ---------------------------------------------------------------------------

    def apply(self, event: Event, payload: dict[str, Any]) -> None:
        armed = self.session.phase_deadline_at
        self.advance(event, payload)
        rows.update(self.session, SAVED_FIELDS)  # save(update_fields=...), without compiling it every event
        self.arm_deadline(armed)

    def advance(self, event: Event, payload: dict[str, Any]) -> None:
        """Apply the event and the chain it sets off to the session in memory, carrying out the
        effects; the caller stores the session's state."""
        limits = session_limits.for_agent(self.session.agent)  # the agent's manifest, else the settings
        self.queue.append(EventInput(event, self.now, payload))
        for _ in range(MAX_CHAIN):
            if not self.queue:
                break
            current = self.queue.popleft()
            before = to_state(self.session)
            try:
                after, effects = machine.transition(before, current, limits)
            except machine.TransitionRefused as exc:
                raise Conflict(str(exc), phase=exc.phase.value, event=exc.event.value) from exc
            except machine.InvalidPayload as exc:
                loc = ["body", "payload", exc.field]
                raise InvalidInput(str(exc), errors=[{"loc": loc, "msg": str(exc), "type": "invalid"}]) from exc
            _store_state(self.session, after)
            _time_in_phase(before, current)
            for item in effects:
                EFFECT_HANDLERS[item.kind](self, before, current, item.data)
        else:
            raise RuntimeError(f"session {self.session.pk}: more than {MAX_CHAIN} chained events")

    def arm_deadline(self, armed: datetime | None) -> None:
        """Once the state is stored: a deadline other than the one ``armed`` before the chain gets its timer."""
        deadline = self.session.phase_deadline_at
        if deadline is not None and deadline != armed:
            # The deadline's own timer; the scheduler tick finds overdue sessions if it is lost.
            session_id = str(self.session.pk)
            dispatch.after_commit("sessions.phase_deadline", session_id, deadline.isoformat(), eta=deadline)

    def _raise(self, event: Event, **payload: Any) -> None:
        self.queue.append(EventInput(event, self.now, payload))

    # --- messages ----------------------------------------------------------------------------

    def _add(self, sender: str, **fields: Any) -> SessionMessage:
        if self._seq is None:  # the session row is locked: nobody else appends meanwhile
            self._seq = (rows.fetch_one(_LAST_SEQ_SQL, [self.session.pk]) or (0,))[0]
        self._seq += 1
        self._commands_at_start = None
        message = SessionMessage.objects.create(
            session=self.session, seq=self._seq, timestamp=self.now, sender=sender, **fields
        )
        if sender == "AI" and message.ai_message_json is not None:
            self._ai = message
        return message

    def _add_system(self, message: dict[str, Any], **fields: Any) -> SessionMessage:
        return self._add("SYSTEM", system_message=message, system_type=message["type"], **fields)

    def _last_ai(self) -> SessionMessage | None:
        if self._ai is None:
            self._ai = (
                self.session.messages.filter(sender="AI", ai_message_json__isnull=False, removed_at__isnull=True)
                .order_by("-seq")
                .first()
            )
        return self._ai

    # --- effects (named after machine.Effect kinds) -----------------------------------------------

    def _store_user_message(self, before: machine.State, event: EventInput, data: dict) -> None:
        payload = event.payload
        segments = payload.get("segments") or [{"type": "text", "text": payload.get("text", "")}]
        try:
            rich = enrichments.rich_message(
                segments,
                is_relative=self.session.type == SessionType.AUTOMATION,
                now=self.now,
                day_start_hour=settings.SESSION_DAY_START_HOUR,
                week_start_day=settings.SESSION_WEEK_START_DAY,
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidInput(
                f"invalid message: {exc}",
                errors=[{"loc": ["body", "payload", "segments"], "msg": str(exc), "type": "invalid_segment"}],
            ) from exc
        self._add("USER", rich_content=rich)
        self._user_commands = rich.get("dataCommands", [])

    def _execute_enrichments(self, before: machine.State, event: EventInput, data: dict) -> None:
        """The enrichments of the user's latest message(s): the one just stored, or, when an
        AUTOMATION starts, the messages copied from its SEED."""
        if self._user_commands is None and self._commands_at_start is not None:
            self._user_commands = self._commands_at_start
        if self._user_commands is None:
            last_other = self.session.messages.exclude(sender="USER").aggregate(last=Max("seq"))["last"] or 0
            user_messages = self.session.messages.filter(sender="USER", seq__gt=last_other, rich_content__isnull=False)
            self._user_commands = [c for m in user_messages for c in m.rich_content.get("dataCommands", [])]
        commands = [DataCommand.from_dict(command) for command in self._user_commands]
        if commands:
            batch = self._execute(commands)
            if batch.system_message:
                self._add_system(batch.system_message)
        self._raise(Event.ENRICHMENTS_EXECUTED)

    def _execute(self, commands: list[DataCommand]) -> executor.CommandBatch:
        return executor.execute(
            commands,
            agent=self.session.agent,
            now=self.now,
            day_start_hour=settings.SESSION_DAY_START_HOUR,
            week_start_day=settings.SESSION_WEEK_START_DAY,
        )

    def _call_ai(self, before: machine.State, event: EventInput, data: dict) -> None:
        if self.session.automation_id and self.session.automation.provider:
            session_id = self.session.pk
            dispatch.after_commit("sessions.call_provider", str(session_id))

    def _store_ai_response(self, before: machine.State, event: EventInput, data: dict) -> None:
        content = event.payload.get("content")
        if not isinstance(content, str):
            raise InvalidInput(
                "AIResponseReceived needs the model's answer as `content` (a string).",
                errors=[{"loc": ["body", "payload", "content"], "msg": "a string is required", "type": "missing"}],
            )
        tokens = dict(self.session.tokens_used or {})
        for key in ("input", "output", "cacheWrite", "cacheRead"):
            value = event.payload.get("tokens", {}).get(key, 0)
            tokens[key] = tokens.get(key, 0) + (value if isinstance(value, int) and value >= 0 else 0)
        self.session.tokens_used = tokens
        metadata = event.payload.get("metadata")
        provider_session = (metadata or {}).get("providerSessionId")
        if isinstance(provider_session, str) and provider_session:
            # The provider's side of the session (seed 003's providerSessionId): its latest answer.
            self.session.provider_session_id = provider_session[:200]
        self._add("AI", ai_message_json=content, execution_metadata=metadata)

    def _parse_response(self, before: machine.State, event: EventInput, data: dict) -> None:
        message = cast("SessionMessage", self._last_ai())  # the answer STORE_AI_RESPONSE just stored
        content = cast("str", message.ai_message_json)
        try:
            parsed = parsing.parse(content, automation=self.session.type == SessionType.AUTOMATION)
        except parsing.FormatError as exc:
            self._send_back(message, f"Format error: {exc}. Answer with the AIMessage JSON.")
            return
        actions = parsed.get("actionCommands") or []
        tools = granted_tools(self.session.agent.active_manifest_id) if actions else {}
        refused = validation.ungranted(actions, tools)
        if refused:
            # Only a manifest grants a tool, never a reviewer: no review item, nothing handed out.
            record(
                actor=SYSTEM,
                action=AuditAction.SESSION_ACTIONS_REFUSED,
                target=self.session,
                tools=refused,
                ai_message=str(message.pk),
                sent_by=self.actor.label,
            )
            self._send_back(message, validation.refusal(refused))
            return
        for n, command in enumerate(actions, start=1):
            command["id"] = action_id(message, n)
        message.ai_message = parsed
        rows.update(message, ["ai_message"])  # parsed after it was stored
        decision = self._resolve_validation(parsed, tools)
        self._raise(
            Event.AI_RESPONSE_PARSED,
            aiMessageId=str(message.pk),
            completed=parsed.get("completed", False),
            validationRequired=decision.required,
            validationContext=decision.context,
            communicationModule=parsed.get("communicationModule"),
            dataCommands=parsed.get("dataCommands"),
            actionCommands=parsed.get("actionCommands"),
        )

    def _send_back(self, message: SessionMessage, summary: str) -> None:
        """The answer is refused as a whole and goes back to the model as a FORMAT_ERROR (seed
        003 section 13): stored as the `ai_response_invalid_format` fallback, so none of its
        commands is ever run or handed out, and retried on the format error's path and limits."""
        message.ai_message = parsing.fallback(cast("str", message.ai_message_json))
        rows.update(message, ["ai_message"])  # parsed after it was stored
        self._raise(Event.PARSE_ERROR_OCCURRED, summary=summary)

    def _resolve_validation(
        self, parsed: dict[str, Any], tools: dict[str, validation.ToolPolicy]
    ) -> validation.Decision:
        if not parsed.get("actionCommands"):
            return validation.Decision(required=False, context={})  # only actions are ever validated
        agent = self.session.agent
        return validation.resolve(
            actions=parsed.get("actionCommands") or [],
            automation=self.session.type == SessionType.AUTOMATION,
            domain=agent.domain,
            session_requires=self.session.require_validation,
            ai_requests=bool(parsed.get("validationRequest")),
            policy=validation.Policy(
                app=settings.SESSION_VALIDATION_APP, domains=frozenset(settings.SESSION_VALIDATION_DOMAINS), tools=tools
            ),
        )

    def _review_expiry(self, actions: list[dict[str, Any]]) -> datetime:
        """REVIEW_EXPIRY_HOURS, or sooner when a tool of the request sets its own
        `approval_timeout_hours` in the manifest (the strictest tool wins)."""
        hours = [settings.REVIEW_EXPIRY_HOURS]
        manifest_id = self.session.agent.active_manifest_id
        if actions and manifest_id:
            tools = {tool["tool_id"]: tool for tool in manifest_document(manifest_id)["tools"]}
            for action in actions:
                tool = tools.get(str(action.get("params", {}).get("tool_id") or action["type"]), {})
                if tool.get("approval_timeout_hours"):
                    hours.append(tool["approval_timeout_hours"])
        return self.now + timedelta(hours=min(hours))

    def _open_review(self, kind: str, title: str, payload: dict[str, Any]) -> int:
        last_ai = self._last_ai()
        item = reviews.open_item(
            actor=SYSTEM,
            kind=REVIEW_KINDS[kind],
            title=title,
            agent=self.session.agent,
            payload={
                "session": str(self.session.pk),
                "sessionName": self.session.name,
                "lastAiMessage": (last_ai.ai_message or {}).get("preText", "") if last_ai else "",
                **payload,
            },
            expires_at=self._review_expiry(payload.get("actionCommands") or []),
        )
        return item.pk

    def _request_validation(self, before: machine.State, event: EventInput, data: dict) -> None:
        context = event.payload["validationContext"]
        item_id = self._open_review(
            "validation",
            f"{self.session.agent.agent_id} asks to run {len(event.payload['actionCommands'])} action(s)",
            {"validationContext": context, "actionCommands": event.payload["actionCommands"]},
        )
        # Before suspending, a trace that stays if nobody ever answers (seed section 12).
        fallback = self._add_system(
            {
                "type": SystemMessageType.ACTIONS_EXECUTED.value,
                "commandResults": [],
                "summary": "VALIDATION_CANCELLED: the actions were not approved.",
                "formattedData": None,
            },
            fallback_kind="VALIDATION_CANCELLED",
        )
        self.session.waiting_context = {
            **self.session.waiting_context,
            "cancelMessageId": str(fallback.pk),
            "reviewItemId": item_id,
        }

    def _request_communication(self, before: machine.State, event: EventInput, data: dict) -> None:
        module = event.payload["communicationModule"]
        question = module["data"].get("question") or module["data"].get("message")
        item_id = self._open_review(
            "communication", f"{self.session.agent.agent_id} asks: {question}", {"module": module}
        )
        fallback = self._add(
            "AI",
            text_content="COMMUNICATION_CANCELLED: the question was not answered.",
            exclude_from_prompt=True,
            fallback_kind="COMMUNICATION_CANCELLED",
        )
        self.session.waiting_context = {
            **self.session.waiting_context,
            "cancelMessageId": str(fallback.pk),
            "reviewItemId": item_id,
        }

    def _remove_fallback(self, before: machine.State, event: EventInput, data: dict) -> None:
        message_id = (before.waiting_context or {}).get("cancelMessageId")
        if message_id:
            SessionMessage.objects.filter(pk=message_id).update(removed_at=self.now)

    def _abandon_waiting(self, before: machine.State, event: EventInput, data: dict) -> None:
        item_id = (before.waiting_context or {}).get("reviewItemId")
        if item_id:
            reviews.decide(
                item_id,
                actor=SYSTEM,
                decision=ReviewDecision.Decision.EXPIRE,
                comment="Withdrawn: the user sent a new message instead.",
                notify=False,
            )

    def _store_communication_response(self, before: machine.State, event: EventInput, data: dict) -> None:
        response = event.payload.get("response")
        if response is None:
            raise InvalidInput(
                "CommunicationResponseReceived needs `response`.",
                errors=[{"loc": ["body", "payload", "response"], "msg": "required", "type": "missing"}],
            )
        self._add("USER", text_content=response if isinstance(response, str) else json.dumps(response))

    def _execute_data_queries(self, before: machine.State, event: EventInput, data: dict) -> None:
        commands = [DataCommand.from_dict(c) for c in (self._last_ai().ai_message or {}).get("dataCommands", [])]
        batch = self._execute(commands)
        if batch.system_message:
            self._add_system(batch.system_message)
        if batch.delegated:
            # Not the platform's data: the agent runs these and posts DataQueriesExecuted.
            self.session.waiting_context = {
                "type": "DelegatedQueries",
                "commands": [c.to_dict() for c in batch.delegated],
            }
        else:
            self._raise(Event.DATA_QUERIES_EXECUTED)

    def _execute_actions(self, before: machine.State, event: EventInput, data: dict) -> None:
        """Actions run on the agent's side: the next action tells it which. A hosted scripted
        automation (demos, tests) may ask the platform to simulate them instead."""
        automation = self.session.automation
        if (
            automation is not None
            and automation.provider == "scripted"
            and automation.provider_config.get("simulate_actions")
        ):
            session_id = str(self.session.pk)
            dispatch.after_commit("sessions.simulate_actions", session_id)

    def _record_results(self, before: machine.State, event: EventInput, data: dict) -> None:
        if self._action_message is not None:  # actions: what ActionResult holds, recorded once
            self._add_system(self._action_message)
            self._action_message = None
            return
        results = event.payload.get("results")
        if not results:
            return
        last = self._last_ai()
        ai = (last.ai_message or {}) if last else {}
        kind = "DATA_ADDED" if event.type == Event.DATA_QUERIES_EXECUTED else "ACTIONS_EXECUTED"
        commands = ai.get("dataCommands" if kind == "DATA_ADDED" else "actionCommands") or []
        self._add_system(executor.record_agent_results(commands, results, kind=kind))

    def _post_text(self, before: machine.State, event: EventInput, data: dict) -> None:
        last = self._last_ai()
        post_text = (last.ai_message or {}).get("postText") if last else None
        if post_text:
            self._add("AI", text_content=post_text, exclude_from_prompt=True)

    def _system_message(self, before: machine.State, event: EventInput, data: dict) -> None:
        self._add_system(
            {"type": data["type"], "commandResults": [], "summary": data["summary"], "formattedData": None}
        )

    def _check_completion(self, before: machine.State, event: EventInput, data: dict) -> None:
        """The model said ``completed`` while its answer still asks for work (data queries or
        actions): ending now would drop that work unseen, so the platform rejects the claim and
        the model is told why."""
        pending = [key for key in ("dataCommands", "actionCommands") if event.payload.get(key)]
        if pending:
            reason = (
                f"Completion rejected: the same answer still asks for {' and '.join(pending)}. "
                "Run the work first (send it without `completed`), then say `completed: true` alone."
            )
            self._raise(Event.COMPLETION_REJECTED, reason=reason)

    def _retry(self, before: machine.State, event: EventInput, data: dict) -> None:
        self._raise(Event.RETRY_SCHEDULED)

    def _schedule(self, before: machine.State, event: EventInput, data: dict) -> None:
        session_id, at, fires = str(self.session.pk), self.session.timer_at, self.session.timer_event
        dispatch.after_commit("sessions.fire_timer", session_id, fires, at.isoformat(), eta=at)

    def _resume(self, before: machine.State, event: EventInput, data: dict) -> None:
        """Pick up transparently where the session stopped (no system message: seed section 6);
        a session back from a suspension is recorded in the audit trail (not in its messages)."""
        if before.end_reason == machine.EndReason.SUSPENDED:
            record(
                actor=SYSTEM,
                action=AuditAction.SESSION_RESUMED,
                target=self.session,
                type=self.session.type,
                phase=self.session.phase,
                reason="slot freed",
            )
        steps = {
            Phase.EXECUTING_ENRICHMENTS: self._execute_enrichments,
            Phase.CALLING_AI: self._call_ai,
            Phase.PARSING_AI_RESPONSE: self._parse_response,
            Phase.EXECUTING_DATA_QUERIES: self._execute_data_queries,
            Phase.EXECUTING_ACTIONS: self._ask_action_outcomes,
            Phase.RETRYING_AFTER_FORMAT_ERROR: self._retry,
            Phase.RETRYING_AFTER_ACTION_FAILURE: self._retry,
        }
        step = steps.get(Phase(self.session.phase))
        if step is not None:
            step(before, event, data)
        elif before.phase in (Phase.WAITING_VALIDATION, Phase.WAITING_COMMUNICATION_RESPONSE):
            self._catch_up_on_review(before)

    def _ask_action_outcomes(self, before: machine.State, event: EventInput, data: dict) -> None:
        """Resumed while its actions were running: they may have run, so they are never handed
        out again. The agent is asked what became of the ones without a recorded result; a
        scripted demo simulates those (and only those) again."""
        if _simulates_actions(self.session):
            self._execute_actions(before, event, data)
            return
        last = self._last_ai()
        commands = (last.ai_message or {}).get("actionCommands") or [] if last else []
        recorded = set(self.session.action_results.values_list("command_id", flat=True))
        pending = [command["id"] for command in commands if command["id"] not in recorded]
        self.session.waiting_context = {"type": "ActionOutcomes", "commandIds": pending}

    def _catch_up_on_review(self, before: machine.State) -> None:
        """A reviewer may have decided while the session was suspended: apply it now."""
        item = ReviewItem.objects.filter(pk=(before.waiting_context or {}).get("reviewItemId")).first()
        if item is None or item.status == ReviewItem.Status.PENDING:
            return
        if before.phase == Phase.WAITING_VALIDATION:
            self._raise(Event.VALIDATION_RECEIVED, approved=item.status == ReviewItem.Status.APPROVED)
        else:
            answer = getattr(getattr(item, "decision", None), "answer", None)
            self._raise(Event.COMMUNICATION_RESPONSE_RECEIVED, response=answer if answer is not None else DECLINED)

    def _session_released(self, before: machine.State, event: EventInput, data: dict) -> None:
        if data.get("requeue"):
            # Its agent did not report in time: back of the queue, and not before the seed's
            # 30-second network retry delay, so a dead agent does not take its slot straight back.
            self.session.queued_at = self.now + machine.NETWORK_RETRY_DELAY
        agent_id = self.session.agent_id
        dispatch.after_commit("sessions.tick_agent", agent_id)


# Every effect a transition may ask for, and the _Run method that carries it out
# (tests/sessions/test_effects.py checks that each kind has exactly one).
EffectHandler = Callable[[_Run, machine.State, EventInput, dict[str, Any]], None]
EFFECT_HANDLERS: dict[EffectKind, EffectHandler] = {
    EffectKind.ABANDON_WAITING: _Run._abandon_waiting,
    EffectKind.CALL_AI: _Run._call_ai,
    EffectKind.CHECK_COMPLETION: _Run._check_completion,
    EffectKind.EXECUTE_ACTIONS: _Run._execute_actions,
    EffectKind.EXECUTE_DATA_QUERIES: _Run._execute_data_queries,
    EffectKind.EXECUTE_ENRICHMENTS: _Run._execute_enrichments,
    EffectKind.PARSE_RESPONSE: _Run._parse_response,
    EffectKind.POST_TEXT: _Run._post_text,
    EffectKind.RECORD_RESULTS: _Run._record_results,
    EffectKind.REMOVE_FALLBACK: _Run._remove_fallback,
    EffectKind.REQUEST_COMMUNICATION: _Run._request_communication,
    EffectKind.REQUEST_VALIDATION: _Run._request_validation,
    EffectKind.RESUME: _Run._resume,
    EffectKind.RETRY: _Run._retry,
    EffectKind.SCHEDULE: _Run._schedule,
    EffectKind.SESSION_RELEASED: _Run._session_released,
    EffectKind.STORE_AI_RESPONSE: _Run._store_ai_response,
    EffectKind.STORE_COMMUNICATION_RESPONSE: _Run._store_communication_response,
    EffectKind.STORE_USER_MESSAGE: _Run._store_user_message,
    EffectKind.SYSTEM_MESSAGE: _Run._system_message,
}


def _check_actor(session: AISession, actor: Principal, event: Event) -> None:
    """An agent drives only its own session, and only with the events an agent emits: a
    reviewer's answer (ValidationReceived, CommunicationResponseReceived) comes from the inbox,
    and the platform's own events from the platform, never from an agent key."""
    if actor.agent is not None:
        if actor.agent.pk != session.agent_id:
            raise Forbidden("This session belongs to another agent.")
        if event not in machine.AGENT_EVENTS:
            emitter = machine.EMITTERS[event].value
            raise Forbidden(
                f"{event.value} is emitted by the {emitter}, not by an agent.", event=event.value, emitter=emitter
            )
    elif actor.user is not None and not actor.has_perm("ai_sessions.change_aisession"):
        raise Forbidden("Your account may not drive sessions.")


def granted_tools(manifest_id: int | None) -> dict[str, validation.ToolPolicy]:
    """The tools an active manifest grants, as the validation levels read them (none without one)."""
    return {
        tool.tool_id: validation.ToolPolicy(tool.permission, tool.requires_approval)
        for tool in ManifestTool.objects.filter(manifest_id=manifest_id)
    }


def apply_event(
    session_id: UUID | str,
    event: str,
    payload: dict[str, Any] | None = None,
    *,
    actor: Principal,
    now: datetime | None = None,
) -> Outcome:
    """Apply one event (and whatever it sets off on the server) in one transaction."""
    try:
        kind = Event(event)
    except ValueError as exc:
        names = ", ".join(e.value for e in Event)
        raise InvalidInput(
            f"unknown event {event!r}", errors=[{"loc": ["body", "type"], "msg": f"one of {names}", "type": "enum"}]
        ) from exc
    payload = payload or {}
    try:
        with transaction.atomic():
            session = _locked_session(session_id)
            _check_actor(session, actor, kind)
            _check_payload(kind, payload)
            run = _Run(session=session, actor=actor, now=now or timezone.now())
            reports_actions = kind in (Event.ACTIONS_EXECUTED, Event.ACTION_FAILURE_OCCURRED)
            if reports_actions and session.phase == Phase.EXECUTING_ACTIONS:
                payload = _with_action_outcome(run, payload)
            run.apply(kind, payload)
    except IntegrityError as exc:
        # The partial unique index: another session of the agent became active first (an
        # operator's activation, a race with the scheduler). A conflict, never a 500.
        if "one_active_session_per_agent" not in str(exc):
            raise
        raise Conflict(
            "The agent already has an active session; this one waits for the slot.",
            phase=session.phase,
            event=kind.value,
        ) from exc
    return Outcome(session=session, next=next_action(session))


@functools.cache
def _locked_session_sql(many: bool = False) -> str:
    """The session row locked for the chain, with its agent and its automation's provider profile
    (the machine reads them), in one statement written once (governance/kernel/rows.py): the ORM
    took longer compiling this join than the database takes running it, on every event. With
    ``many``, the rows of an array of ids, locked in id order (two batches never deadlock)."""
    quote = connection.ops.quote_name

    def table(model: type[Model], alias: str) -> str:
        return f"{quote(model._meta.db_table)} {alias}"

    return (
        f"SELECT {rows.select_list(AISession, 's')}, {rows.select_list(Agent, 'a')},"
        f" {rows.select_list(Automation, 'au')}, {rows.select_list(ProviderProfile, 'p')}"
        f" FROM {table(AISession, 's')} JOIN {table(Agent, 'a')} ON a.id = s.agent_id"
        f" LEFT JOIN {table(Automation, 'au')} ON au.id = s.automation_id"
        f" LEFT JOIN {table(ProviderProfile, 'p')} ON p.id = au.profile_id"
        + (" WHERE s.session_id = ANY(%s) ORDER BY s.session_id" if many else " WHERE s.session_id = %s")
        + " FOR UPDATE OF s"
    )


def _locked_session(session_id: UUID | str) -> AISession:
    """``select_for_update(of=("self",)).select_related("agent", "automation__profile").get(pk=...)``:
    the same row, lock, instances and errors (DoesNotExist, ValidationError for a malformed id)."""
    row = rows.fetch_one(_locked_session_sql(), [AISession._meta.pk.to_python(session_id)])
    if row is None:
        raise AISession.DoesNotExist("AISession matching query does not exist.")
    return _session_of(row)


def _session_of(row: tuple[Any, ...]) -> AISession:
    session, agent, automation, profile = rows.instances(row, AISession, Agent, Automation, ProviderProfile)
    session.agent = agent
    if automation is not None:
        automation.profile = profile
    session.automation = automation
    return session


# Where each session's messages stand: its last seq, and the user messages after the last one
# that was not the user's (whose commands an activation's enrichments run), in order.
_MESSAGES_AT_START_SQL = (
    "SELECT l.session_id, l.last_seq, m.rich_content"
    f" FROM (SELECT session_id, max(seq) AS last_seq, max(seq) FILTER (WHERE sender <> 'USER') AS last_other"
    f" FROM {connection.ops.quote_name(SessionMessage._meta.db_table)} WHERE session_id = ANY(%s)"
    " GROUP BY session_id) l"
    f" LEFT JOIN {connection.ops.quote_name(SessionMessage._meta.db_table)} m ON m.session_id = l.session_id"
    " AND m.sender = 'USER' AND m.rich_content IS NOT NULL AND m.seq > coalesce(l.last_other, 0)"
    " ORDER BY l.session_id, m.seq"
)


def activate_many(session_ids: list[UUID], *, now: datetime) -> list[AISession]:
    """SessionActivationRequested for sessions of distinct agents, as ``apply_event`` applies it
    to each, in a fixed number of statements for the whole batch: the rows locked in one, where
    their messages stand read in one, the states stored in one pipelined round trip. For the
    scheduler, which holds the agents' locks and has seen their slots free: a refused transition
    or a second active session raises, and the caller rolls the batch back."""
    with connection.cursor() as cursor:
        cursor.execute(_locked_session_sql(many=True), [session_ids])
        sessions = [_session_of(row) for row in cursor.fetchall()]
        cursor.execute(_MESSAGES_AT_START_SQL, [session_ids])
        at_start: dict[UUID, tuple[int, list[dict[str, Any]]]] = {}
        for session_id, last_seq, rich in cursor.fetchall():
            commands = at_start.setdefault(session_id, (last_seq, []))[1]
            if rich is not None:
                commands.extend(json.loads(rich).get("dataCommands", []))  # jsonb arrives as text (rows.py)
    runs = []
    for session in sessions:
        last_seq, commands = at_start.get(session.pk, (0, []))
        run = _Run(session=session, actor=SYSTEM, now=now, _seq=last_seq, _commands_at_start=commands)
        armed = session.phase_deadline_at
        run.advance(Event.SESSION_ACTIVATION_REQUESTED, {})
        runs.append((run, armed))
    rows.update_many([run.session for run, _ in runs], SAVED_FIELDS)
    for run, armed in runs:
        run.arm_deadline(armed)
    return sessions


def _check_payload(kind: Event, payload: Any) -> None:
    """Every event's payload against its schema (sessions/schemas.py): 422 with the path."""
    try:
        EVENT_PAYLOADS[kind.value].model_validate(payload)
    except ValidationError as exc:
        errors = [
            {"loc": ["body", "payload", *error["loc"]], "msg": error["msg"], "type": error["type"]}
            for error in exc.errors(include_url=False, include_input=False)
        ]
        raise InvalidInput(f"invalid {kind.value} payload", errors=errors) from None


def action_id(message: SessionMessage, n: int) -> str:
    """The stable id of the AI message's n-th action: the same on every parse of that message,
    distinct from every other action of every session (the message id is a UUID)."""
    return f"act-{message.pk.hex}-{n}"


def _with_action_outcome(run: _Run, payload: dict[str, Any]) -> dict[str, Any]:
    """Record the reported action results once each (ActionResult: unique session + command id;
    the first recorded result of an id stands), then judge the outcome from what is recorded:
    success only when there is at least one action and every one is SUCCESS or CACHED. An agent's
    ``allSuccess: false`` can make it a failure; its ``true`` never overrides a FAILED result.
    keepControl comes from the AI message, not the agent."""
    last = run._last_ai()
    ai = (last.ai_message or {}) if last else {}
    commands = ai.get("actionCommands") or []
    reported = executor.record_agent_results(
        commands, payload.get("results") or [], kind=SystemMessageType.ACTIONS_EXECUTED
    )
    expected = {command["id"] for command in commands}
    ActionResult.objects.bulk_create(
        [
            ActionResult(
                session=run.session,
                command_id=result["commandId"],
                ai_message=last,
                status=result["status"],
                result=result,
                recorded_at=run.now,
            )
            for result in reported["commandResults"]
            if result.get("commandId") in expected
        ],
        ignore_conflicts=True,
    )
    recorded = {row.command_id: row.result for row in run.session.action_results.filter(command_id__in=expected)}
    ordered = [recorded[command["id"]] for command in commands if command["id"] in recorded]
    rejected = [r for r in reported["commandResults"] if r.get("commandId") not in expected]
    run._action_message = system_message(SystemMessageType.ACTIONS_EXECUTED, ordered + rejected)
    success = bool(ordered) and all(r["status"] in ("SUCCESS", "CACHED") for r in ordered)
    success = success and payload.get("allSuccess") is not False
    return {**payload, "allSuccess": success, "keepControl": bool(ai.get("keepControl"))}


def next_action(session: AISession) -> dict[str, Any]:
    """What the agent should do now, given where the session rests."""
    if not session.is_active:
        return {"action": "none", "endReason": session.end_reason}
    phase = Phase(session.phase)
    if phase == Phase.CALLING_AI:
        if session.automation_id and session.automation.provider:
            return {"action": "wait", "reason": "the server calls the model (hosted session)"}
        return {"action": "call_ai", "prompt": f"/api/v1/sessions/{session.pk}/prompt"}
    if phase == Phase.EXECUTING_ACTIONS and (session.waiting_context or {}).get("type") == "ActionOutcomes":
        # Resumed mid-execution: report what became of these; never run them again.
        return {"action": "report_action_outcomes", "commandIds": session.waiting_context["commandIds"]}
    if phase == Phase.EXECUTING_ACTIONS:
        ai = session.messages.filter(sender="AI", ai_message__isnull=False).order_by("-seq").first()
        return {"action": "execute_actions", "commands": (ai.ai_message or {}).get("actionCommands", []) if ai else []}
    if phase == Phase.EXECUTING_DATA_QUERIES:
        return {"action": "execute_data_queries", "commands": (session.waiting_context or {}).get("commands", [])}
    if phase == Phase.WAITING_VALIDATION:
        return {"action": "wait_for_validation", "reviewItemId": (session.waiting_context or {}).get("reviewItemId")}
    if phase == Phase.WAITING_COMMUNICATION_RESPONSE:
        return {"action": "wait_for_response", "reviewItemId": (session.waiting_context or {}).get("reviewItemId")}
    if phase == Phase.IDLE:
        return {"action": "wait_for_user"}
    return {"action": "wait", "until": session.timer_at.isoformat() if session.timer_at else None}
