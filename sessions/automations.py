"""Automations: creating and changing them. The API and the admin both come here, so the schedule
rule, the profile rule and the audit row exist once.

Which model a hosted automation calls is an operator's decision: the automation names a provider
profile, an agent may name only the profiles its active manifest lists (``provider_profiles``),
an operator any enabled one, and scripted profiles (which fabricate answers and simulate actions)
only the system itself. No URL, key or key variable ever comes from the caller.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule

from agents import quotas
from agents import triggers as job_triggers
from agents.models import Agent
from agents.models.trigger import EVENTS, event_filter_errors
from agents.registry import manifest_document
from governance.kernel import cron as cron_rules
from governance.kernel import dispatch
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import DomainError, Forbidden, InvalidInput, NotFound
from governance.kernel.json_guard import error
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record
from sessions import enrichments, scheduler
from sessions.models import AISession, Automation, ProviderProfile
from sessions.profiles import is_system

SCHEDULE_NEEDS_INTERVAL = "A SCHEDULED automation needs an interval or a cron expression."
ONE_SCHEDULE = "Give intervalMinutes or cron, not both."
CHANGEABLE = ("name", "enabled", "trigger", "interval_minutes", "cron", "profile")
SCHEDULE_FIELDS = ("interval_minutes", "cron")


def _invalid(field: str, msg: str, kind: str = "value_error") -> InvalidInput:
    return InvalidInput(msg, errors=[{"loc": ["body", field], "msg": msg, "type": kind}])


def schedule_error(trigger: str, interval_minutes: int | None, cron: str | None = None) -> str | None:
    """The schedule rule: a SCHEDULED automation runs every ``interval_minutes`` or at the
    times ``cron`` names, so it needs one of them."""
    if trigger == Automation.Trigger.SCHEDULED and not interval_minutes and not cron:
        return SCHEDULE_NEEDS_INTERVAL
    return None


def check_schedule(trigger: str, interval_minutes: int | None, cron: str | None) -> cron_rules.Cron | None:
    """The whole schedule rule, for the API, the admin form and the services alike: one of an
    interval and a cron (never both), a cron that parses, a SCHEDULED automation with either.
    InvalidInput at ``body.cron`` or ``body.intervalMinutes``; the parsed cron otherwise."""
    if interval_minutes is not None and cron is not None:
        raise _invalid("cron", ONE_SCHEDULE, "conflict")
    parsed = None
    if cron is not None:
        try:
            parsed = cron_rules.parse(cron)
        except ValueError as exc:
            raise _invalid("cron", f"Not a cron expression: {exc}.", "cron_invalid") from exc
    problem = schedule_error(trigger, interval_minutes, cron)
    if problem:
        raise _invalid("intervalMinutes", problem, "missing")
    return parsed


def _crontab_row(parsed: cron_rules.Cron | None) -> CrontabSchedule | None:
    """django-celery-beat's row for ``parsed`` in the server's time zone, shared by the
    automations with the same expression (beat's admin lists them with their meaning)."""
    if parsed is None:
        return None
    fields = {
        "minute": parsed.minute,
        "hour": parsed.hour,
        "day_of_month": parsed.day_of_month,
        "month_of_year": parsed.month_of_year,
        "day_of_week": parsed.day_of_week,
        "timezone": settings.TIME_ZONE,
    }
    return CrontabSchedule.objects.filter(**fields).order_by("pk").first() or CrontabSchedule.objects.create(**fields)


def check_event(trigger: str, event: str, event_filter: dict[str, Any] | None) -> None:
    """Seed 003's EVENT trigger: an EVENT automation names the platform event that runs it (the
    events job triggers fire on), and only an EVENT automation does; its filter is checked as a
    job trigger's is. InvalidInput at ``body.event`` or ``body.eventFilter``."""
    if trigger == Automation.Trigger.EVENT and not event:
        raise _invalid("event", f"an EVENT automation names its event: one of {', '.join(EVENTS)}", "missing")
    if trigger != Automation.Trigger.EVENT and (event or event_filter):
        raise _invalid("event", "only an EVENT automation names an event", "unexpected")
    if event:
        if event not in EVENTS:
            raise _invalid("event", f"one of {', '.join(EVENTS)}", "enum")
        problems = event_filter_errors(event, event_filter)
        if problems:
            raise _invalid("eventFilter", "; ".join(problems), "event_filter")


def on_platform_event(event: str, subject: str, facts: dict[str, Any], depth: int) -> None:
    """Run the enabled EVENT automations of ``event`` whose filter ``facts`` satisfy and whose agent
    may hear the event (its own, or another agent's its manifest subscribes to: checked here too,
    whoever made the automation and whenever). Registered with agents.triggers in AppConfig.ready,
    so it runs in the event's own transaction. A run the platform refuses (no manifest, the agent's
    queue quota) is recorded and never fails the event."""
    found = Automation.objects.select_related("agent", "seed_session").filter(
        trigger=Automation.Trigger.EVENT, enabled=True, event=event
    )
    for automation in found:
        if not job_triggers.matches(automation.event_filter, facts) or not job_triggers.hears(automation.agent, facts):
            continue
        try:
            with transaction.atomic():
                # An event storm must not queue unbounded runs: they count as the agent's own.
                scheduler.check_queue_quota(automation.agent, Principal(agent=automation.agent))
                scheduler.execute_automation(automation, actor=SYSTEM, trigger=Automation.Trigger.EVENT)
        except DomainError as exc:
            record(
                actor=SYSTEM,
                action=AuditAction.AUTOMATION_EVENT_REFUSED,
                target=automation,
                event=event,
                subject=subject,
                detail=exc.detail,
            )


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


# Not durable: load_demo runs each app's demo, which calls this, in one transaction.
@transaction.atomic
def create_automation(
    agent: Agent,
    *,
    actor: Principal,
    name: str,
    trigger: str = Automation.Trigger.SCHEDULED,
    interval_minutes: int | None = None,
    cron: str | None = None,
    enabled: bool = True,
    seed_session_id: UUID | None = None,
    messages: list[dict[str, Any]] | None = None,
    profile_name: str | None = None,
    first_run_at: datetime | None = None,
    now: datetime | None = None,
    story: str = "",
    domain: str = "",
    project: str = "",
    event: str = "",
    event_filter: dict[str, Any] | None = None,
) -> Automation:
    """An automation of ``agent`` from a SEED session (given, or made from ``messages``).

    Everything is checked before anything is written, and it is all one transaction: a refused
    request leaves no automation and no SEED session behind. An EVENT automation on another
    agent's events is Forbidden unless the agent's manifest subscribes to them (whoever asks: the
    same rule keeps such events from it at every event). ``first_run_at`` (server-side callers
    only) overrides the first scheduled run, which is otherwise one interval from now. ``story``
    (with ``domain`` and ``project``) goes with ``messages``: the SEED made from them keeps it and every run
    copies it, so each run's prompt carries the story's step-0 memory block (sessions.prompt)."""
    now = now or timezone.now()
    _require(actor, agent, "ai_sessions.add_automation")
    agent = Agent.objects.select_for_update(of=("self",)).get(pk=agent.pk)  # creators count one at a time
    quotas.check(agent, "automations", Automation.objects.filter(agent=agent), actor=actor)
    parsed = check_schedule(trigger, interval_minutes, cron)
    check_event(trigger, event, event_filter)
    refusal = job_triggers.subscription_refusal(agent, event_filter)
    if refusal:
        raise Forbidden(refusal, subscription=(event_filter or {}).get("agent"))
    profile = find_profile(profile_name, agent=agent, actor=actor)
    if seed_session_id is not None:
        if story or domain or project:
            raise _invalid("story", "a SEED session given keeps its own story; give messages to name one")
        seed = AISession.objects.filter(pk=seed_session_id, agent=agent, type="SEED").first()
        if seed is None:
            raise _invalid("seedSessionId", "no SEED session of this agent with that id", "not_found")
    elif messages:
        seed = scheduler.create_seed(
            agent, name=name, messages=messages, now=now, story=story, domain=domain, project=project
        )
    else:
        raise _invalid("messages", "give seedSessionId or messages", "missing")
    automation = Automation.objects.create(
        agent=agent,
        name=name,
        seed_session=seed,
        trigger=trigger,
        interval_minutes=interval_minutes,
        crontab=_crontab_row(parsed),
        enabled=enabled,
        profile=profile,
        event=event,
        event_filter=event_filter or {},
        created_by=actor.label,
    )
    if trigger == Automation.Trigger.SCHEDULED:
        automation.next_run_at = first_run_at or automation.next_run_after(now)
        automation.save(update_fields=["next_run_at"])
    record(
        actor=actor,
        action=AuditAction.AUTOMATION_CREATED,
        target=automation,
        agent=agent.agent_id,
        trigger=trigger,
        interval_minutes=interval_minutes,
        cron=cron,
        event=event or None,
        profile=profile.name if profile else None,
    )
    agent_pk = agent.pk
    dispatch.after_commit("sessions.tick_agent", agent_pk)
    return automation


def _schedule_changes(automation: Automation, changes: dict[str, Any]) -> tuple[int | None, str | None]:
    """The interval and cron the automation will have: the ones given, and a schedule given
    alone replaces the other kind (a cron sent to an interval automation makes it a cron one)."""
    interval = changes.get("interval_minutes", automation.interval_minutes)
    cron = changes.get("cron", automation.cron)
    if changes.get("cron") is not None and "interval_minutes" not in changes:
        interval = None
    if changes.get("interval_minutes") is not None and "cron" not in changes:
        cron = None
    return interval, cron


# Not durable: the admin's change form calls it inside Django's own transaction.
@transaction.atomic
def change_automation(automation_id: int, *, actor: Principal, **changes: Any) -> Automation:
    """Switch, reschedule, rename or re-host an automation (any of ``CHANGEABLE``).

    The next run follows the schedule: computed again when the schedule changes or the
    automation is switched on, and cleared while it is off, so the scheduler's tick (the beat
    entry every automation shares) never starts a switched-off one. A changed profile passes the
    same rule as at creation. The scheduler looks at the agent's slot after commit (seed
    section 6)."""
    unknown = set(changes) - set(CHANGEABLE)
    if unknown:
        raise ValueError(f"not changeable: {', '.join(sorted(unknown))}")
    locked = Automation.objects.select_for_update(of=("self",)).select_related("agent", "crontab")
    automation = locked.filter(pk=automation_id).first()
    if automation is None:
        raise NotFound(f"No automation {automation_id}.")
    _require(actor, automation.agent, "ai_sessions.change_automation")
    if "profile" in changes and changes["profile"] != automation.profile:
        check_profile(changes["profile"], agent=automation.agent, actor=actor)
    interval, cron = _schedule_changes(automation, changes)
    trigger = changes.get("trigger", automation.trigger)
    parsed = check_schedule(trigger, interval, cron)
    rescheduled = (interval, cron) != (automation.interval_minutes, automation.cron) or trigger != automation.trigger
    switched_on = changes.get("enabled") and not automation.enabled
    for field, value in changes.items():
        if field not in SCHEDULE_FIELDS:
            setattr(automation, field, value)
    automation.interval_minutes = interval
    automation.crontab = _crontab_row(parsed)
    if not automation.enabled or automation.trigger != Automation.Trigger.SCHEDULED:
        automation.next_run_at = None
    elif rescheduled or switched_on or automation.next_run_at is None:
        automation.next_run_at = automation.next_run_after(timezone.now())
    automation.save()
    record(
        actor=actor,
        action=AuditAction.AUTOMATION_CHANGED,
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
