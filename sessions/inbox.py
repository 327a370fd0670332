"""What a reviewer's decision does to the session that asked (registered with governance.reviews.services)."""

from __future__ import annotations

from governance.kernel.principals import SYSTEM
from governance.kernel.services import record
from governance.reviews.models import ReviewDecision, ReviewItem
from sessions import validation
from sessions.machine import Event, Phase
from sessions.models import AISession
from sessions.processor import DECLINED, apply_event, granted_tools


def _waiting_session(item: ReviewItem, phase: Phase) -> AISession | None:
    """The session still waiting for this very item; None when it has moved on (stopped, new
    user message), in which case the decision is kept but changes nothing."""
    session = AISession.objects.filter(pk=item.payload.get("session")).first()
    if session is None or session.phase != phase or not session.is_active:
        return None
    if (session.waiting_context or {}).get("reviewItemId") != item.pk:
        return None
    return session


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
            record(actor=SYSTEM, action="session.approval_voided", target=session, review_item=item.pk, tools=withdrawn)
            approved = False
    apply_event(session.pk, Event.VALIDATION_RECEIVED, {"approved": approved}, actor=SYSTEM)


def on_communication_decided(item: ReviewItem, decision: ReviewDecision) -> None:
    session = _waiting_session(item, Phase.WAITING_COMMUNICATION_RESPONSE)
    if session is not None:
        answered = decision.decision == ReviewDecision.Decision.ANSWER and decision.answer is not None
        response = decision.answer if answered else DECLINED
        apply_event(session.pk, Event.COMMUNICATION_RESPONSE_RECEIVED, {"response": response}, actor=SYSTEM)
