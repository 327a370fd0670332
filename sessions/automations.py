"""Automations: creating and changing them. The API and the admin both come here, so the schedule
rule, the profile rule and the audit row exist once.

Which model a hosted automation calls is an operator's decision: the automation names a provider
profile, an agent may name only the profiles its active manifest lists (``provider_profiles``),
an operator any enabled one, and scripted profiles (which fabricate answers and simulate actions)
only the system itself. No URL, key or key variable ever comes from the caller.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from agents import quotas
from agents.models import Agent
from agents.registry import manifest_document
from governance.kernel import dispatch
from governance.kernel.exceptions import Forbidden, InvalidInput, NotFound
from governance.kernel.principals import Principal
from governance.kernel.services import record
from governance.kernel.validation import error
from sessions import enrichments, scheduler
from sessions.models import AISession, Automation, ProviderProfile
from sessions.profiles import is_system

SCHEDULE_NEEDS_INTERVAL = "A SCHEDULED automation needs an interval."
DEFAULT_INTERVAL_MINUTES = 60
CHANGEABLE = ("name", "enabled", "trigger", "interval_minutes", "profile")


def _invalid(field: str, msg: str, kind: str = "value_error") -> InvalidInput:
    return InvalidInput(msg, errors=[{"loc": ["body", field], "msg": msg, "type": kind}])


def schedule_error(trigger: str, interval_minutes: int | None) -> str | None:
    """The schedule rule: a SCHEDULED automation runs every ``interval_minutes``, so it needs one."""
    if trigger == Automation.Trigger.SCHEDULED and not interval_minutes:
        return SCHEDULE_NEEDS_INTERVAL
    return None


def manifest_profiles(agent: Agent) -> list[str]:
    """The provider profiles the agent's active manifest lets it name (none without a manifest)."""
    if agent.active_manifest_id is None:
        return []
    names = manifest_document(agent.active_manifest_id).get("provider_profiles") or []
    return [name for name in names if isinstance(name, str)]


def check_profile(profile: ProviderProfile | None, *, agent: Agent, actor: Principal) -> None:
    """May ``actor`` host ``agent``'s automation on ``profile``? 422 for a profile that cannot be
    used by anyone (disabled, or scripted outside the server), 403 for one the agent's manifest
    does not list."""
    if profile is None:
        return
    if not profile.enabled or (profile.provider == ProviderProfile.Provider.SCRIPTED and not is_system(actor)):
        raise _invalid("providerProfile", f"no enabled provider profile named {profile.name!r}", "not_found")
    if actor.is_agent and profile.name not in manifest_profiles(agent):
        raise Forbidden(
            f"The active manifest of {agent.agent_id} does not list provider profile {profile.name!r} "
            "(manifest field provider_profiles).",
            profile=profile.name,
        )


def find_profile(name: str | None, *, agent: Agent, actor: Principal) -> ProviderProfile | None:
    """The profile called ``name`` if ``actor`` may use it for ``agent`` (see check_profile)."""
    if name is None:
        return None
    profile = ProviderProfile.objects.filter(name=name).first()
    if profile is None:
        raise _invalid("providerProfile", f"no enabled provider profile named {name!r}", "not_found")
    check_profile(profile, agent=agent, actor=actor)
    return profile


def _require(actor: Principal, agent: Agent, perm: str) -> None:
    if actor.is_agent:
        if actor.agent.pk != agent.pk:
            raise Forbidden("An agent manages its own automations only.")
    elif not is_system(actor) and not actor.has_perm(perm):
        raise Forbidden(f"This needs the {perm} permission.")


@transaction.atomic
def create_automation(
    agent: Agent,
    *,
    actor: Principal,
    name: str,
    trigger: str = Automation.Trigger.SCHEDULED,
    interval_minutes: int | None = None,
    enabled: bool = True,
    seed_session_id: UUID | None = None,
    messages: list[dict[str, Any]] | None = None,
    profile_name: str | None = None,
    first_run_at: datetime | None = None,
    now: datetime | None = None,
) -> Automation:
    """An automation of ``agent`` from a SEED session (given, or made from ``messages``).

    Everything is checked before anything is written, and it is all one transaction: a refused
    request leaves no automation and no SEED session behind. ``first_run_at`` (server-side callers
    only) overrides the first scheduled run, which is otherwise one interval from now."""
    now = now or timezone.now()
    _require(actor, agent, "ai_sessions.add_automation")
    agent = Agent.objects.select_for_update(of=("self",)).get(pk=agent.pk)  # creators count one at a time
    quotas.check(agent, "automations", Automation.objects.filter(agent=agent), actor=actor)
    problem = schedule_error(trigger, interval_minutes)
    if problem:
        raise _invalid("intervalMinutes", problem, "missing")
    profile = find_profile(profile_name, agent=agent, actor=actor)
    if seed_session_id is not None:
        seed = AISession.objects.filter(pk=seed_session_id, agent=agent, type="SEED").first()
        if seed is None:
            raise _invalid("seedSessionId", "no SEED session of this agent with that id", "not_found")
    elif messages:
        seed = scheduler.create_seed(agent, name=name, messages=messages, now=now)
    else:
        raise _invalid("messages", "give seedSessionId or messages", "missing")
    next_run_at = None
    if trigger == Automation.Trigger.SCHEDULED:
        next_run_at = first_run_at or now + timedelta(minutes=interval_minutes or DEFAULT_INTERVAL_MINUTES)
    automation = Automation.objects.create(
        agent=agent,
        name=name,
        seed_session=seed,
        trigger=trigger,
        interval_minutes=interval_minutes,
        enabled=enabled,
        next_run_at=next_run_at,
        profile=profile,
        created_by=actor.label,
    )
    record(
        actor=actor,
        action="automation.created",
        target=automation,
        agent=agent.agent_id,
        trigger=trigger,
        interval_minutes=interval_minutes,
        profile=profile.name if profile else None,
    )
    agent_pk = agent.pk
    dispatch.after_commit("sessions.tick_agent", agent_pk)
    return automation


@transaction.atomic
def change_automation(automation_id: int, *, actor: Principal, **changes: Any) -> Automation:
    """Switch, reschedule, rename or re-host an automation (any of ``CHANGEABLE``).

    A schedule switched on needs a next run, or the scheduler would never pick it up; a changed
    profile passes the same rule as at creation. The scheduler looks at the agent's slot after
    commit (seed section 6)."""
    unknown = set(changes) - set(CHANGEABLE)
    if unknown:
        raise ValueError(f"not changeable: {', '.join(sorted(unknown))}")
    automation = Automation.objects.select_for_update(of=("self",)).select_related("agent").filter(pk=automation_id)
    automation = automation.first()
    if automation is None:
        raise NotFound(f"No automation {automation_id}.")
    _require(actor, automation.agent, "ai_sessions.change_automation")
    if "profile" in changes and changes["profile"] != automation.profile:
        check_profile(changes["profile"], agent=automation.agent, actor=actor)
    for field, value in changes.items():
        setattr(automation, field, value)
    problem = schedule_error(automation.trigger, automation.interval_minutes)
    if problem:
        raise _invalid("intervalMinutes", problem, "missing")
    if automation.trigger == Automation.Trigger.SCHEDULED and automation.enabled and automation.next_run_at is None:
        interval = automation.interval_minutes or DEFAULT_INTERVAL_MINUTES
        automation.next_run_at = timezone.now() + timedelta(minutes=interval)
    automation.save()
    record(
        actor=actor,
        action="automation.changed",
        target=automation,
        fields={field: str(getattr(value, "name", value)) for field, value in changes.items()},
    )
    agent_pk = automation.agent_id
    dispatch.after_commit("sessions.tick_agent", agent_pk)
    return automation


def check_seed_messages(messages: list[dict[str, Any]] | None) -> None:
    """Every segment of an automation's seed messages read as the seed will be (sessions.enrichments):
    a malformed one is a 422 at ``body.messages.<i>.segments.<j>``, before anything is written."""
    errors = []
    for i, message in enumerate(messages or []):
        for j, segment in enumerate(message.get("segments") or []):
            try:
                enrichments.rich_message(
                    [segment],
                    is_relative=True,
                    now=timezone.now(),
                    day_start_hour=settings.SESSION_DAY_START_HOUR,
                    week_start_day=settings.SESSION_WEEK_START_DAY,
                )
            except (ValueError, TypeError, AttributeError) as exc:
                message_text = str(exc).replace("segment 0 ", "the segment ")
                errors.append(error(["body", "messages", i, "segments", j], message_text, "segment_invalid"))
    if errors:
        raise InvalidInput("A seed message has an invalid segment; see errors.", errors=errors)
