"""Automations router (/api/v1/automations): scheduled and event-triggered sessions, run by hand
or hosted on a provider profile, and those profiles."""

from django.db.models import QuerySet
from django.http import HttpRequest
from ninja import Router, Status

from agents.access import get_agent_for
from agents.models import Agent
from governance.kernel.auth import caller
from governance.kernel.exceptions import Forbidden, InvalidInput, NotFound
from governance.kernel.principals import Principal
from sessions import automations as automation_actions
from sessions import profiles, scheduler
from sessions.models import Automation, ProviderProfile
from sessions.schemas import (
    AutomationIn,
    AutomationOut,
    AutomationPatch,
    ExecuteOut,
    ProviderProfileIn,
    ProviderProfileOut,
)

router = Router(tags=["automations"])


def _automation_agent(principal: Principal, agent_id: str | None) -> Agent:
    if principal.agent is not None:
        if agent_id not in (None, principal.agent.agent_id):
            raise Forbidden("An agent creates automations for itself only.")
        return principal.agent
    if not principal.has_perm("ai_sessions.add_automation"):
        raise Forbidden("Creating automations needs the ai_sessions.add_automation permission.")
    if agent_id is None:
        msg = "agentId is required for operators"
        raise InvalidInput(msg, errors=[{"loc": ["body", "agentId"], "msg": msg, "type": "missing"}])
    return get_agent_for(principal, agent_id)


@router.post("", operation_id="create_automation", response={201: AutomationOut})
def create_automation(request: HttpRequest, data: AutomationIn) -> Status:
    """An automation from a SEED session (given, or made from `messages`) with a schedule, hosted
    on `providerProfile` when given (sessions/automations.py holds the rules)."""
    actor = caller(request)
    agent = _automation_agent(actor, data.agentId)
    automation_actions.check_seed_messages([m.dict() for m in data.messages] if data.messages else None)
    automation = automation_actions.create_automation(
        agent,
        actor=actor,
        name=data.name,
        trigger=data.trigger,
        interval_minutes=data.intervalMinutes,
        cron=data.cron,
        enabled=data.enabled,
        seed_session_id=data.seedSessionId,
        messages=[m.dict() for m in data.messages] if data.messages else None,
        profile_name=data.providerProfile,
        story=data.story,
        domain=data.domain,
        project=data.project,
        event=data.event or "",
        event_filter=data.eventFilter,
    )
    return Status(201, automation)


@router.get("/provider-profiles", operation_id="list_provider_profiles", response=list[ProviderProfileOut])
def list_provider_profiles(request: HttpRequest) -> QuerySet[ProviderProfile]:
    """Operators only: profiles name internal URLs and secret variables, which agents need not see."""
    principal = caller(request)
    if principal.agent is not None or not principal.has_perm("ai_sessions.view_providerprofile"):
        raise Forbidden("Listing provider profiles needs the ai_sessions.view_providerprofile permission.")
    return ProviderProfile.objects.all()


@router.post("/provider-profiles", operation_id="create_provider_profile", response={201: ProviderProfileOut})
def create_provider_profile(request: HttpRequest, data: ProviderProfileIn) -> Status:
    """Operators with ai_sessions.add_providerprofile; the base URL must pass the outbound guard."""
    profile = profiles.create_profile(
        actor=caller(request),
        name=data.name,
        provider=data.provider,
        model=data.model,
        base_url=data.baseUrl,
        secret_name=data.secretName,
        internal=data.internal,
        options=data.options,
        enabled=data.enabled,
    )
    return Status(201, profile)


# After the provider-profile routes: "/{automation_id}" would otherwise catch their path.
@router.patch("/{automation_id}", operation_id="change_automation", response=AutomationOut)
def change_automation(request: HttpRequest, automation_id: int, data: AutomationPatch) -> Automation:
    """Rename, switch on or off, or reschedule (`intervalMinutes` or `cron`): the owner agent or an
    operator with ai_sessions.change_automation. Switched off, it has no next run."""
    return automation_actions.change_automation(automation_id, actor=caller(request), **data.changes())


@router.post("/{automation_id}/execute", operation_id="execute_automation", response={202: ExecuteOut})
def execute_automation(request: HttpRequest, automation_id: int) -> Status:
    """MANUAL trigger: `active` when the run started now, `queued` behind the agent's slot."""
    automation = Automation.objects.select_related("agent").filter(pk=automation_id).first()
    if automation is None:
        raise NotFound(f"No automation {automation_id}.")
    principal = caller(request)
    if principal.agent is not None and principal.agent.pk != automation.agent_id:
        raise Forbidden("This automation belongs to another agent.")
    if principal.agent is None and not principal.has_perm("ai_sessions.change_automation"):
        raise Forbidden("Running automations needs the ai_sessions.change_automation permission.")
    status, session = scheduler.execute_automation(automation, actor=principal)
    return Status(202, {"status": status, "sessionId": session.pk})
