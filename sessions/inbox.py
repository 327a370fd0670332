"""The review kinds of sessions (an action approval, a question): what the inbox shows of them,
and what a reviewer's decision does to the session that asked (declared in governance.reviews.kinds)."""

from __future__ import annotations

import json
from typing import Any

from governance.kernel.audit import AuditAction
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from governance.notifications.models import EventKind
from governance.reviews.kinds import ANSWER, REJECT, Control, Payload, ReviewKind
from governance.reviews.models import ReviewDecision, ReviewItem
from sessions import validation
from sessions.effects import DECLINED, REVIEW_KINDS, granted_tools
from sessions.machine import Event, Phase
from sessions.models import AISession
from sessions.processor import apply_event


def _waiting_session(item: ReviewItem, phase: Phase) -> AISession | None:
    """The session still waiting for this very item; None when it has moved on (stopped, new
    user message), in which case the decision is kept but changes nothing."""
    session = AISession.objects.filter(pk=item.payload.get("session")).first()
    if session is None or session.phase != phase or not session.is_active:
        return None
    if (session.waiting_context or {}).get("reviewItemId") != item.pk:
        return None
    return session


def _answer(session: AISession, event: Event, payload: dict[str, Any], decision: ReviewDecision) -> None:
    """The decision's answer, emitted by whoever decided: the reviewer (whose review permission
    governance.reviews checked), or the platform for an item that expired."""
    if decision.user is None:
        apply_event(session.pk, event, payload, actor=SYSTEM)
    else:
        apply_event(session.pk, event, payload, actor=Principal(user=decision.user), as_reviewer=True)


def on_validation_decided(item: ReviewItem, decision: ReviewDecision) -> None:
    """The reviewer's answer goes to the waiting session. An approval of actions on a tool the
    agent's manifest no longer grants (a new version loaded while the item waited) is not
    carried out: only a manifest grants a tool, so the session hears a refusal, audited."""
    session = _waiting_session(item, Phase.WAITING_VALIDATION)
    if session is None:
        return
    approved = decision.decision == ReviewDecision.Decision.APPROVE
    if approved:
        actions = [a for a in (item.payload or {}).get("actionCommands") or [] if isinstance(a, dict)]
        withdrawn = validation.ungranted(actions, granted_tools(session.agent.active_manifest_id))
        if withdrawn:
            record(
                actor=SYSTEM,
                action=AuditAction.SESSION_APPROVAL_VOIDED,
                target=session,
                review_item=item.pk,
                tools=withdrawn,
            )
            approved = False
    _answer(session, Event.VALIDATION_RECEIVED, {"approved": approved}, decision)


def on_communication_decided(item: ReviewItem, decision: ReviewDecision) -> None:
    session = _waiting_session(item, Phase.WAITING_COMMUNICATION_RESPONSE)
    if session is not None:
        answered = decision.decision == ReviewDecision.Decision.ANSWER and decision.answer is not None
        response = decision.answer if answered else DECLINED
        _answer(session, Event.COMMUNICATION_RESPONSE_RECEIVED, {"response": response}, decision)


# What the inbox shows of a session's request, read from the payload the processor writes.


def _validation_summary(payload: Payload) -> str:
    """The actions an action approval asks to run, in words."""
    actions = (payload.get("validationContext") or {}).get("actions") or [
        f"Run {command.get('type')}" for command in payload.get("actionCommands") or [] if isinstance(command, dict)
    ]
    return "; ".join(str(action) for action in actions)


def _shown_actions(payload: Payload) -> dict[str, Any]:
    """The actions an action approval asks to run (``actions``), each as its words (the validation
    context's, whose long values are shortened) with its full parameters as JSON: the reviewer reads
    those before approving. Items from before the actions were kept have their words only."""
    commands = [command for command in payload.get("actionCommands") or [] if isinstance(command, dict)]
    words = [str(action) for action in (payload.get("validationContext") or {}).get("actions") or []]
    if not commands:
        return {"actions": [{"words": action, "parameters": None} for action in words]}
    if len(words) != len(commands):
        words = [f"Run {(command.get('params') or {}).get('tool_id') or command.get('type')}" for command in commands]
    return {
        "actions": [
            {
                "words": action,
                "parameters": json.dumps(command.get("params") or {}, indent=2, sort_keys=True, ensure_ascii=False),
            }
            for action, command in zip(words, commands, strict=True)
        ]
    }


def _module(payload: Payload) -> dict[str, Any]:
    return payload.get("module") or {}


def _question(payload: Payload) -> str:
    data = _module(payload).get("data") or {}
    return str(data.get("question") or data.get("message") or "")


def _options(payload: Payload) -> tuple[str, ...] | None:
    """The options of a MultipleChoice question (seed 003 section 12); None for another module."""
    module = _module(payload)
    if module.get("type") != "MultipleChoice":
        return None
    return tuple((module.get("data") or {}).get("options") or ())


_DECLINE = Control(REJECT, "Decline to answer", "reject")
# A Validation module asks yes or no. Both buttons answer (approve/reject as plain decisions
# would reach the model as "declined to answer"), with these words.
_YES_NO = (
    Control(ANSWER, "Approve", "approve", answer="Approved"),
    Control(ANSWER, "Reject", "reject", answer="Rejected"),
)


def _answer_controls(payload: Payload) -> tuple[Control, ...]:
    """A question is answered (one button per option, or yes/no) or declined, never approved."""
    options = _options(payload)
    if options is not None:
        return (*(Control(ANSWER, option, "answer", answer=option) for option in options), _DECLINE)
    if _module(payload).get("type") == "Validation":
        return _YES_NO
    return (_DECLINE,)


# The scheduler's tick expires both (seconds, not beat's minute): reviews.expire_due leaves them.
VALIDATION_KIND = ReviewKind(
    code=REVIEW_KINDS["validation"],
    label="Action approval",
    template="sessions/review_kinds/session_validation.html",
    summary=_validation_summary,
    details=_shown_actions,
    on_decided=on_validation_decided,
    expires_itself=True,
    announces_as=EventKind.INBOX_VALIDATION,
    asked_by_agent=True,
)
COMMUNICATION_KIND = ReviewKind(
    code=REVIEW_KINDS["communication"],
    label="Question",
    template="sessions/review_kinds/session_communication.html",
    summary=_question,
    controls=_answer_controls,
    options=_options,
    on_decided=on_communication_decided,
    expires_itself=True,
    announces_as=EventKind.INBOX_COMMUNICATION,
    asked_by_agent=True,
)
