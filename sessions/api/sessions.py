"""Sessions router (/api/v1/sessions): an agent's sessions on the state machine, their events,
messages and prompt."""

from typing import Literal
from uuid import UUID

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Router, Status
from ninja.pagination import paginate

from agents.models import Agent
from governance.kernel.access import get_for, require_owner_agent, visible
from governance.kernel.auth import caller
from governance.kernel.exceptions import Forbidden, InvalidInput
from governance.kernel.principals import Principal
from governance.kernel.validation import BoundedLimitOffsetPagination
from sessions import automations as automation_actions
from sessions import prompt, scheduler
from sessions.models import AISession, SessionMessage
from sessions.processor import apply_event
from sessions.querysets import SessionQuerySet
from sessions.schemas import (
    AIStateOut,
    EventIn,
    EventOut,
    MessageOut,
    PromptOut,
    SessionIn,
)

router = Router(tags=["sessions"])


def _sessions() -> SessionQuerySet:
    return AISession.objects.select_related("agent", "automation")


def _visible_session(principal: Principal, session_id: UUID) -> AISession:
    """A session for a read: another agent's is 404, as an unknown id."""
    session = visible(principal, _sessions(), session_id, what="session")
    assert isinstance(session, AISession)
    return session


def _session_to_change(principal: Principal, session_id: UUID) -> AISession:
    """A session to change: another agent's is refused (403, and the refusal is audited)."""
    session = get_for(principal, _sessions(), session_id, perm="ai_sessions.view_aisession", what="session")
    assert isinstance(session, AISession)
    return session


def _agent(principal: Principal) -> Agent:
    if principal.agent is None:
        raise Forbidden("This endpoint is for agents (agent key).")
    return principal.agent


@router.post("", operation_id="create_session", response={201: AIStateOut})
def create_session(request: HttpRequest, data: SessionIn) -> Status:
    """CHAT starts at once (pre-empting an AUTOMATION, which is suspended); AUTOMATION queues
    and starts when the agent's slot is free, with its instructions (`messages`) if given. A
    `story` (with `domain` and `project`) puts its step-0 memory block in level 2 of the prompt."""
    actor = caller(request)
    agent = _agent(actor)
    if data.type == "CHAT":
        if data.messages is not None:
            msg = "a CHAT gets its messages as UserMessageSent events; messages are an AUTOMATION's instructions"
            raise InvalidInput(msg, errors=[{"loc": ["body", "messages"], "msg": msg, "type": "automation_only"}])
        session = scheduler.start_chat(
            agent,
            actor=actor,
            name=data.name,
            require_validation=data.requireValidation,
            story=data.story,
            domain=data.domain,
            project=data.project,
        )
        return Status(201, session)
    messages = [message.dict() for message in data.messages or []]
    automation_actions.check_seed_messages(messages)
    session = scheduler.queue_automation_session(
        agent,
        actor=actor,
        name=data.name,
        require_validation=data.requireValidation,
        messages=messages,
        story=data.story,
        domain=data.domain,
        project=data.project,
    )
    return Status(201, session)


@router.get("/next", operation_id="next_session", response={200: AIStateOut, 204: None})
def next_session(request: HttpRequest) -> Status:
    """The session this agent should work on now, or 204 when there is none."""
    session = scheduler.next_session(_agent(caller(request)))
    return Status(200, session) if session else Status(204, None)


@router.get("/{session_id}", operation_id="get_session", response=AIStateOut)
def get_session(request: HttpRequest, session_id: UUID) -> AISession:
    return _visible_session(caller(request), session_id)


@router.post("/{session_id}/events", operation_id="post_event", response=EventOut)
def post_event(request: HttpRequest, session_id: UUID, data: EventIn) -> dict:
    """Apply an AIEvent; 409 (naming `phase` and `event`) when the phase does not allow it."""
    actor = caller(request)
    session = _session_to_change(actor, session_id)
    require_owner_agent(actor, "session")
    outcome = apply_event(session.pk, data.type, data.payload, actor=actor)
    return {"state": outcome.session, "next": outcome.next}


@router.get("/{session_id}/messages", operation_id="list_messages", response=list[MessageOut])
@paginate(BoundedLimitOffsetPagination)
def list_messages(request: HttpRequest, session_id: UUID) -> QuerySet[SessionMessage]:
    """Messages in order (withdrawn fallbacks are not listed)."""
    session = _visible_session(caller(request), session_id)
    return session.messages.filter(removed_at__isnull=True).order_by("seq")


@router.get("/{session_id}/prompt", operation_id="get_prompt", response=PromptOut)
def get_prompt(request: HttpRequest, session_id: UUID, format: Literal["openai", "anthropic"] | None = None) -> dict:
    """PromptData: level 1 and 2, and the messages the model sees (no NETWORK_ERROR /
    SESSION_TIMEOUT system messages, no excludeFromPrompt messages). With `format`, also the
    provider-ready `system` and `messages` (OpenAI-compatible or Anthropic)."""
    actor = caller(request)
    session = _visible_session(actor, session_id)
    require_owner_agent(actor, "session")
    data, messages = prompt.build(session)
    ready = prompt.provider_ready(data, format) if format else {}
    return {
        "level1Content": data.level1_content,
        "level2Content": data.level2_content,
        "sessionMessages": messages,
        **ready,
    }


@router.post("/{session_id}/stop", operation_id="stop_session", response=AIStateOut)
def stop_session(request: HttpRequest, session_id: UUID) -> AISession:
    """STOP: ends CANCELLED, never resumes. The owner agent or an operator may stop."""
    actor = caller(request)
    session = _session_to_change(actor, session_id)
    return scheduler.stop(session, actor=actor)
