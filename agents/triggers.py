"""Job triggers (seed 001 "MiniLo DECLENCHE"): cron schedules, signed webhooks and platform events
that create jobs for an agent.

Every firing builds a JobEnvelope from the trigger's template and submits it through
``submission.submit_job`` as the agent, exactly as ``POST /jobs`` would: the agent's manifest still
decides (R1, intents, inputs, pre-conditions), and ``context.source`` says ``cron``, ``webhook``
or ``event``. The idempotency key names the firing (the cron slot, the webhook delivery, the
event's object), so a firing delivered twice creates one job.

* **Cron**: the beat task ``agents.fire_due_triggers`` (every minute) takes the triggers whose
  ``next_run_at`` has come under SKIP LOCKED, fires each once and moves it to its next slot. Two
  beats, or a worker redelivering the task, cannot fire a slot twice. A trigger that missed
  several slots (beat down) fires once, then waits for the next future slot.
* **Webhook**: ``POST /api/v1/triggers/<name>/webhook``, signed as Standard Webhooks says
  (governance/kernel/webhooks.py): the signature covers ``webhook-id``, the timestamp and the body,
  and the job's idempotency key is made from that id, so a captured delivery sent again under
  another id is refused and sent again as it was is the same job. The secret is derived from the
  server's SECRET_KEY, the trigger and its ``secret_version`` (rotating bumps it): no secret is
  stored in a row.
* **Event**: a job finishing and a learning promoted call ``on_event`` inside their own
  transaction, so the new jobs commit with the event or not at all, and no broker is involved. A
  trigger that cannot create its job (the manifest refuses it) records why and never fails the
  event's own write. Chains stop at ``JOB_TRIGGER_MAX_CHAIN`` event hops. Another agent's event
  reaches an agent only when the agent's active manifest subscribes to it (``events.subscribe``):
  checked when a subscription is saved, and again at every event, for subscriptions saved before
  the rule, by an operator, or before the manifest changed (``hears``).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from agents import envelope, hooks, registries
from agents.jobs import submission
from agents.manifest import subscribes
from agents.models import Agent, Job, JobTrigger
from agents.registry import manifest_document
from agents.vocabulary import Registry
from governance.kernel import cron as cron_rules
from governance.kernel import json_guard, keys, webhooks
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import DomainError, Forbidden, InvalidInput, NotFound, Unauthorized
from governance.kernel.periodic import Failures
from governance.kernel.principals import SYSTEM, Principal
from governance.kernel.services import record

logger = logging.getLogger(__name__)

# The scheme before Standard Webhooks: it signed the body, not the delivery id the job was keyed on.
RETIRED_HEADERS = ("X-Signature", "X-Timestamp", "X-Delivery-Id")
MESSAGE_ID_CHARS = 64  # a longer webhook-id is keyed by its hash, so the idempotency key keeps it whole


def _next_run(trigger: JobTrigger, after: datetime) -> datetime | None:
    if trigger.kind != JobTrigger.Kind.CRON or trigger.crontab is None:
        return None
    row = trigger.crontab
    parsed = cron_rules.Cron(row.minute, row.hour, row.day_of_month, row.month_of_year, row.day_of_week)
    return cron_rules.next_after(parsed, after, row.timezone)


# Not durable: load_demo runs each app's demo, which calls this, in one transaction.
@transaction.atomic
def save_trigger(trigger: JobTrigger, *, actor: Principal, changed: list[str]) -> JobTrigger:
    """Add or change a trigger (operators with the model permission): checked, its next cron
    slot computed, recorded with who and which fields."""
    adding = trigger.pk is None
    perm = "agents.add_jobtrigger" if adding else "agents.change_jobtrigger"
    if actor.is_agent or (actor.is_operator and not actor.has_perm(perm)):
        raise Forbidden(f"Managing job triggers needs the {perm} permission.")
    trigger.full_clean()  # the model's clean: a template the envelope takes, the kind's fields
    if adding or {"intent", "entity_type"} & set(changed):
        _check_registries(trigger)
    if trigger.enabled and trigger.kind != JobTrigger.Kind.WEBHOOK:
        _check_admissible(trigger)
    if trigger.enabled and trigger.kind == JobTrigger.Kind.EVENT:
        refusal = subscription_refusal(trigger.agent, trigger.event_filter)
        if refusal:
            raise ValidationError({"event_filter": [refusal]})
    if adding or {"crontab", "kind", "enabled"} & set(changed):
        trigger.next_run_at = _next_run(trigger, timezone.now())
    trigger.save()
    record(
        actor=actor,
        action=AuditAction.TRIGGER_ADDED if adding else AuditAction.TRIGGER_CHANGED,
        target=trigger,
        kind=trigger.kind,
        fields=sorted(changed),
    )
    return trigger


def _check_registries(trigger: JobTrigger) -> None:
    """A new trigger, or a changed intent or entity type, takes active registry values; a trigger
    saved before its value was retired keeps it through other edits (its firings are refused
    at admission like any new job)."""
    uses = [
        registries.Use(Registry.INTENTS, trigger.intent, ("intent",)),
        registries.Use(Registry.ENTITY_TYPES, trigger.entity_type, ("entity_type",)),
    ]
    errors: dict[str, list[str]] = {}
    for problem in registries.problems(uses):
        errors.setdefault(str(problem["loc"][0]), []).append(problem["msg"])
    if errors:
        raise ValidationError(errors)


def _check_admissible(trigger: JobTrigger) -> None:
    """Would the agent's manifest accept the job today? (A webhook's body completes its payload,
    so it is judged per delivery only.) The manifest may change later: firings are judged again."""
    try:
        submission.admit(trigger.envelope(key="check"), actor=Principal(agent=trigger.agent))
    except InvalidInput as exc:
        raise ValidationError(
            {"payload": [f"{'.'.join(map(str, e['loc'][1:]))}: {e['msg']}" for e in exc.errors]}
        ) from exc
    except Forbidden as exc:
        raise ValidationError({"agent": [exc.detail]}) from exc


@transaction.atomic(durable=True)
def rotate_secret(trigger: JobTrigger, *, actor: Principal) -> JobTrigger:
    """A new webhook secret; the old one stops verifying at once."""
    if actor.is_agent or (actor.is_operator and not actor.has_perm("agents.change_jobtrigger")):
        raise Forbidden("Rotating a webhook secret needs the agents.change_jobtrigger permission.")
    JobTrigger.objects.filter(pk=trigger.pk).update(secret_version=F("secret_version") + 1)
    trigger.refresh_from_db()
    record(
        actor=actor, action=AuditAction.TRIGGER_SECRET_ROTATED, target=trigger, secret_version=trigger.secret_version
    )
    return trigger


def _fire(trigger: JobTrigger, *, key: str, extra_payload: dict[str, Any] | None = None) -> tuple[Job, bool]:
    """Submit one firing's job as the trigger's agent; count it when it is new."""
    job, created = submission.submit_job(
        trigger.envelope(key=key, extra_payload=extra_payload), actor=Principal(agent=trigger.agent)
    )
    if created:
        JobTrigger.objects.filter(pk=trigger.pk).update(fired_count=F("fired_count") + 1, last_fired_at=timezone.now())
        record(actor=SYSTEM, action=AuditAction.TRIGGER_FIRED, target=trigger, job=str(job.job_id), key=key)
    return job, created


def _refused(trigger: JobTrigger, key: str, exc: DomainError) -> None:
    logger.warning("[triggers] %s could not create its job: %s", trigger.name, exc.detail)
    record(actor=SYSTEM, action=AuditAction.TRIGGER_REFUSED, target=trigger, key=key, detail=exc.detail, **exc.data())


# Cron ---------------------------------------------------------------------------------------------


def fire_due(*, now: datetime | None = None, batch: int = 100) -> dict[str, Any]:
    """Beat task body: fire each cron trigger whose slot has come, once, and move it on. A trigger
    that cannot be handled (its crontab edited into nonsense) is reported and switched off, and
    the others fire."""
    now = now or timezone.now()
    counts = {"fired": 0, "replayed": 0, "refused": 0}
    failures = Failures("triggers")
    while True:
        # Not durable: load_demo runs each app's demo, which calls this, in one transaction.
        with transaction.atomic():
            due = list(
                JobTrigger.objects.select_for_update(of=("self",), skip_locked=True)
                .select_related("agent", "crontab")
                .filter(kind=JobTrigger.Kind.CRON, enabled=True, next_run_at__lte=now)
                .order_by("next_run_at")[:batch]
            )
            for trigger in due:
                with failures.guard(f"trigger {trigger.pk}", mark=functools.partial(_switch_off, trigger)):
                    counts[_fire_slot(trigger, now)] += 1
        if len(due) < batch:
            return {**counts, **failures.as_dict()}


def _fire_slot(trigger: JobTrigger, now: datetime) -> str:
    """Fire the trigger's due slot and move it to the next one; which count it adds to. The next
    slot is read first, so a schedule that cannot be read fires nothing."""
    slot = trigger.next_run_at
    assert slot is not None  # fire_due's filter
    following = _next_run(trigger, now)
    try:
        with transaction.atomic():
            _, created = _fire(trigger, key=slot.isoformat())
        outcome = "fired" if created else "replayed"
    except DomainError as exc:
        _refused(trigger, slot.isoformat(), exc)
        outcome = "refused"
    trigger.next_run_at = following
    trigger.save(update_fields=["next_run_at"])
    return outcome


def _switch_off(trigger: JobTrigger, exc: Exception) -> None:
    """A trigger its run could not handle stops firing (an operator sees why in the audit log),
    instead of failing again at every beat."""
    JobTrigger.objects.filter(pk=trigger.pk).update(enabled=False)
    record(
        actor=SYSTEM, action=AuditAction.TRIGGER_DISABLED, target=trigger, reason=f"{type(exc).__name__}: {exc}"[:500]
    )


# Webhooks -----------------------------------------------------------------------------------------


def webhook_secret(trigger: JobTrigger) -> str:
    """The trigger's signing secret as its sender is given it (``whsec_...``), derived (never
    stored): SECRET_KEY, the trigger, its version."""
    derived = keys.derived_secret(settings.SECRET_KEY, f"agents.job-trigger:{trigger.pk}:{trigger.secret_version}")
    return webhooks.secret_text(bytes.fromhex(derived))


def _verified(trigger: JobTrigger, body: bytes, headers: Mapping[str, str]) -> str:
    """The delivery's signed ``webhook-id``; Unauthorized for anything else, a delivery signed
    the retired way included (told so, since its sender has to change)."""
    try:
        return webhooks.verify(webhook_secret(trigger), headers, body, now=time.time())
    except webhooks.SignatureRefused as exc:
        if not headers.get(webhooks.SIGNATURE_HEADER) and any(headers.get(name) for name in RETIRED_HEADERS):
            raise Unauthorized(
                "The X-Signature scheme is retired: sign as Standard Webhooks says, with the "
                f"{webhooks.ID_HEADER}, {webhooks.TIMESTAMP_HEADER} and {webhooks.SIGNATURE_HEADER} headers."
            ) from exc
        raise Unauthorized(str(exc)) from exc


def _delivery_key(message_id: str) -> str:
    """The firing's key: the sender's webhook-id, which the signature covers."""
    if len(message_id) > MESSAGE_ID_CHARS:
        message_id = "sha256:" + hashlib.sha256(message_id.encode()).hexdigest()
    return f"webhook:{message_id}"


def receive_webhook(name: str, body: bytes, *, headers: Mapping[str, str]) -> tuple[Job, bool]:
    """A signed delivery to trigger ``name``: its JSON object body merged into the job's payload,
    one job per ``webhook-id``. Nothing is created (or told) before the signature verifies."""
    trigger = (
        JobTrigger.objects.select_related("agent").filter(name=name, kind=JobTrigger.Kind.WEBHOOK, enabled=True).first()
    )
    if trigger is None:
        raise NotFound(f"No enabled webhook trigger {name!r}.")
    message_id = _verified(trigger, body, headers)
    try:
        data = json_guard.decode(body or b"{}")
    except json_guard.BodyErrors as exc:
        raise InvalidInput("The request is invalid; see errors.", errors=exc.errors) from exc
    except ValueError as exc:
        raise InvalidInput(
            "The body is not JSON.", errors=[{"loc": ["body"], "msg": str(exc), "type": "json_invalid"}]
        ) from exc
    if not isinstance(data, dict):
        msg = "The body is a JSON object (merged into the job's payload)."
        raise InvalidInput(msg, errors=[{"loc": ["body"], "msg": msg, "type": "dict_type"}])
    with transaction.atomic(durable=True):
        return _fire(trigger, key=_delivery_key(message_id), extra_payload=data)


# Events -------------------------------------------------------------------------------------------


def matches(event_filter: dict[str, Any] | None, facts: dict[str, Any]) -> bool:
    """Whether an event's ``facts`` satisfy a filter: each named field equal, or among a list."""
    for field, wanted in (event_filter or {}).items():
        if wanted is None:
            continue
        value = facts.get(field)
        if (value not in wanted) if isinstance(wanted, list) else (value != wanted):
            return False
    return True


def hears(agent: Agent, facts: dict[str, Any]) -> bool:
    """Whether an event with ``facts`` may reach ``agent``: an event of no agent, of the agent
    itself, or of an agent its active manifest subscribes to (``events.subscribe``). No manifest,
    no other agent's events."""
    source = facts.get("agent")
    if source is None or source == agent.agent_id:
        return True
    if agent.active_manifest_id is None:
        return False
    events = manifest_document(agent.active_manifest_id).get("events") or {}
    return subscribes(events.get("subscribe") or [], str(source))


def subscription_refusal(agent: Agent, event_filter: dict[str, Any] | None) -> str | None:
    """Why ``agent`` may not subscribe to the events ``event_filter`` names, or None. A filter
    naming no agent is every agent the listener hears (``hears`` decides at each event)."""
    source = (event_filter or {}).get("agent")
    if source is None or hears(agent, {"agent": source}):
        return None
    return (
        f"The active manifest of {agent.agent_id} does not subscribe to the events of {source} "
        "(manifest field events.subscribe)."
    )


def on_event(event: str, *, subject: str, facts: dict[str, Any], depth: int = 0) -> list[Job]:
    """Fire the enabled triggers of ``event`` whose filter ``facts`` satisfy; call inside the
    transaction that makes the event happen. ``subject`` names the object (one job per trigger
    and subject); ``depth`` is how many event hops led here."""
    triggers = list(
        JobTrigger.objects.select_related("agent").filter(kind=JobTrigger.Kind.EVENT, enabled=True, event=event)
    )
    created_jobs: list[Job] = []
    for trigger in triggers:
        if not matches(trigger.event_filter, facts) or not hears(trigger.agent, facts):
            continue
        key = f"{event}:{subject}"
        if depth >= settings.JOB_TRIGGER_MAX_CHAIN:
            record(actor=SYSTEM, action=AuditAction.TRIGGER_CHAIN_STOPPED, target=trigger, key=key, depth=depth)
            continue
        payload = {"event": {"name": event, "subject": subject, "depth": depth + 1, **facts}}
        try:
            with transaction.atomic():
                job, created = _fire(trigger, key=key, extra_payload=payload)
        except DomainError as exc:
            _refused(trigger, key, exc)
            continue
        if created:
            created_jobs.append(job)
    for listener in hooks.PLATFORM_EVENTS:
        listener(event, subject, facts, depth)
    return created_jobs


def job_finished(job: Job) -> None:
    """``job.finished`` for a job that just reached a final status."""
    event = job.payload.get("event") if isinstance(job.payload, dict) else None
    depth = envelope.chain_depth(event)
    facts = {"jobId": str(job.job_id), "agent": job.agent.agent_id, "intent": job.intent, "status": job.status}
    on_event(JobTrigger.Event.JOB_FINISHED, subject=str(job.job_id), facts=facts, depth=depth)


def learning_promoted(*, learning_id: int, story: str, domain: str, scope: str, previous: str) -> None:
    """``learning.promoted`` (memory's lifecycle calls it in the promotion's transaction)."""
    facts = {"learningId": learning_id, "story": story, "domain": domain, "scope": scope, "previousScope": previous}
    on_event(JobTrigger.Event.LEARNING_PROMOTED, subject=f"learning:{learning_id}:{scope}", facts=facts)
