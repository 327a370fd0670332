"""The audit trail's vocabulary: every action the product records, and nothing else.

Like Zulip's ``AuditLogEventType``, one closed list replaces names typed (or built with f-strings)
at each call site: an action is found by grepping its member, a typo fails at import rather than
writing a row no filter will ever find, and the admin's filter on ``AuditEvent.action`` lists
them all. The values are the strings stored rows already hold and tests read: they never change.
A family of actions (``review.approve``, ``review.reject``...) is mapped member by member next to
the code that picks one, never built at run time.
"""

from __future__ import annotations

from django.db import models


class AuditAction(models.TextChoices):
    """What an ``AuditEvent`` says happened, as ``domain.verb``."""

    # Access: a request the edge refused (governance.kernel.services.record_refusal).
    ACCESS_REFUSED = "access.refused", "Access refused"

    # API keys (governance.kernel.services).
    API_KEY_ISSUED = "api_key.issued", "API key issued"
    API_KEY_REVOKED = "api_key.revoked", "API key revoked"

    # Retention runs (controlplane.retention).
    RETENTION_APPLIED = "retention.applied", "Retention applied"

    # Notification rules (governance.notifications).
    NOTIFICATION_RULE_ADDED = "notification_rule.added", "Notification rule added"
    NOTIFICATION_RULE_CHANGED = "notification_rule.changed", "Notification rule changed"
    NOTIFICATION_RULE_SECRET_ROTATED = "notification_rule.secret_rotated", "Notification rule secret rotated"

    # The reviewer inbox: an item opened, then one decision (ReviewDecision.Decision).
    REVIEW_OPENED = "review.opened", "Review opened"
    REVIEW_APPROVE = "review.approve", "Review approved"
    REVIEW_REJECT = "review.reject", "Review rejected"
    REVIEW_ANSWER = "review.answer", "Review answered"
    REVIEW_EXPIRE = "review.expire", "Review expired"

    # LLM output contracts (governance.contracts).
    CONTRACT_CREATED = "contract.created", "Contract created"
    CONTRACT_CHANGED = "contract.changed", "Contract changed"

    # Agents and their manifests (agents.services, agents.registry).
    AGENT_REGISTERED = "agent.registered", "Agent registered"
    MANIFEST_ACTIVATED = "manifest.activated", "Manifest activated"

    # The registries of domains, intents, entity types and roles (agents.registries).
    REGISTRY_ADDED = "registry.added", "Registry value added"
    REGISTRY_REINSTATED = "registry.reinstated", "Registry value reinstated"
    REGISTRY_RETIRED = "registry.retired", "Registry value retired"
    REGISTRY_RELABELLED = "registry.relabelled", "Registry value relabelled"

    # Named schemas (agents.named_schemas).
    SCHEMA_ADDED = "schema.added", "Schema added"
    SCHEMA_CHANGED = "schema.changed", "Schema changed"
    SCHEMA_REINSTATED = "schema.reinstated", "Schema reinstated"
    SCHEMA_RETIRED = "schema.retired", "Schema retired"

    # Skills (agents.skills).
    SKILL_CREATED = "skill.created", "Skill created"
    SKILL_UPDATED = "skill.updated", "Skill updated"

    # Jobs (agents.jobs): submitted, leased, run, and ended by the agent or the platform.
    JOB_SUBMITTED = "job.submitted", "Job submitted"
    JOB_LEASED = "job.leased", "Job leased"
    JOB_STATE_UPDATED = "job.state_updated", "Job state updated"
    JOB_RESULT_SUBMITTED = "job.result_submitted", "Job result submitted"
    JOB_CONTINUED = "job.continued", "Job continued"
    JOB_CONTINUATION_REFUSED = "job.continuation_refused", "Job continuation refused"
    JOB_CONTINUATION_STOPPED = "job.continuation_stopped", "Job continuation stopped"
    JOB_LEASE_EXPIRED = "job.lease_expired", "Job lease expired"
    JOB_SWEEP_FAILED = "job.sweep_failed", "Job sweep failed"
    JOB_FAILED = "job.failed", "Job failed"
    JOB_EXPIRED = "job.expired", "Job expired"

    # Job triggers (agents.triggers).
    TRIGGER_ADDED = "trigger.added", "Trigger added"
    TRIGGER_CHANGED = "trigger.changed", "Trigger changed"
    TRIGGER_SECRET_ROTATED = "trigger.secret_rotated", "Trigger secret rotated"
    TRIGGER_REFUSED = "trigger.refused", "Trigger refused"
    TRIGGER_FIRED = "trigger.fired", "Trigger fired"
    TRIGGER_DISABLED = "trigger.disabled", "Trigger disabled"
    TRIGGER_CHAIN_STOPPED = "trigger.chain_stopped", "Trigger chain stopped"

    # Escalations (agents.escalations): each step of an escalation's life.
    ESCALATION_OPENED = "escalation.opened", "Escalation opened"
    ESCALATION_TARGET_REFUSED = "escalation.target_refused", "Escalation target refused"
    ESCALATION_TARGET_UNAVAILABLE = "escalation.target_unavailable", "Escalation target unavailable"
    ESCALATION_ROUTED_TO_AGENT = "escalation.routed_to_agent", "Escalation routed to an agent"
    ESCALATION_ROUTED_TO_HUMAN = "escalation.routed_to_human", "Escalation routed to a human"
    ESCALATION_HANDLED = "escalation.handled", "Escalation handled"
    ESCALATION_REESCALATED = "escalation.reescalated", "Escalation re-escalated"
    ESCALATION_EXPIRED = "escalation.expired", "Escalation expired"

    # Tool calls and their approvals (agents.tools).
    TOOL_DRY_CALL = "tool.dry_call", "Tool dry call"
    TOOL_APPROVAL_REQUESTED = "tool.approval_requested", "Tool approval requested"
    TOOL_GRANT_USED = "tool.grant_used", "Tool grant used"
    TOOL_GRANT_EXPIRED = "tool.grant_expired", "Tool grant expired"

    # Critical KPI alerts (agents.kpi_alerts).
    KPI_ALERT_OPENED = "kpi_alert.opened", "KPI alert opened"
    KPI_ALERT_RESOLVED = "kpi_alert.resolved", "KPI alert resolved"

    # Sessions (sessions.scheduler, sessions.processor, sessions.inbox).
    SESSION_STARTED = "session.started", "Session started"
    SESSION_QUEUED = "session.queued", "Session queued"
    SESSION_STOPPED = "session.stopped", "Session stopped"
    SESSION_RESUMED = "session.resumed", "Session resumed"
    SESSION_ACTIONS_REFUSED = "session.actions_refused", "Session actions refused"
    SESSION_APPROVAL_VOIDED = "session.approval_voided", "Session approval voided"
    SESSION_REVIEW_APPLIED = "session.review_applied", "Reviewer's answer applied to session"

    # Automations (sessions.automations, sessions.scheduler).
    AUTOMATION_CREATED = "automation.created", "Automation created"
    AUTOMATION_CHANGED = "automation.changed", "Automation changed"
    AUTOMATION_EVENT_REFUSED = "automation.event_refused", "Automation event refused"
    AUTOMATION_EXECUTED = "automation.executed", "Automation executed"

    # Provider profiles and prompt chunks (sessions.profiles, sessions.admin).
    PROVIDER_PROFILE_CREATED = "provider_profile.created", "Provider profile created"
    PROVIDER_PROFILE_CHANGED = "provider_profile.changed", "Provider profile changed"
    PROMPT_CHUNK_ADDED = "prompt_chunk.added", "Prompt chunk added"
    PROMPT_CHUNK_CHANGED = "prompt_chunk.changed", "Prompt chunk changed"

    # Learnings (memory.learnings, memory.lifecycle, memory.privacy).
    LEARNING_CREATED = "learning.created", "Learning created"
    LEARNING_PROMOTED = "learning.promoted", "Learning promoted"
    LEARNING_ARCHIVED = "learning.archived", "Learning archived"
    LEARNING_RESTORED = "learning.restored", "Learning restored"
    LEARNING_DEMOTED = "learning.demoted", "Learning demoted"
    LEARNING_ERASED = "learning.erased", "Learning erased"
    LEARNING_REDACTED = "learning.redacted", "Learning redacted"

    # Gate results (memory.learnings).
    GATE_RESULT_RECORDED = "gate_result.recorded", "Gate result recorded"
    GATE_RESULTS_IMPORTED = "gate_results.imported", "Gate results imported"

    # Held memory (memory.holds).
    MEMORY_HELD = "memory.held", "Memory held"
    MEMORY_HOLD_REJECTED = "memory.hold_rejected", "Memory hold rejected"
    MEMORY_QUARANTINED = "memory.quarantined", "Memory quarantined"
    MEMORY_RELEASED = "memory.released", "Memory released"

    # Memory imports (memory.transfer), one per file kind.
    MEMORY_LEARNINGS_IMPORTED = "memory.learnings_imported", "Learnings imported"
    MEMORY_ARCHIVE_IMPORTED = "memory.archive_imported", "Learnings archive imported"
    MEMORY_INJECTIONS_IMPORTED = "memory.injections_imported", "Injections imported"

    # Search calibration (memory.calibration).
    SEARCH_CALIBRATED = "search.calibrated", "Search calibrated"

    # Watch notes (memory.watch_notes, memory.privacy).
    VEILLE_INDEXED = "veille.indexed", "Watch note indexed"
    VEILLE_UPDATED = "veille.updated", "Watch note updated"
    VEILLE_REMOVED = "veille.removed", "Watch note removed"
    VEILLE_ERASED = "veille.erased", "Watch note erased"
    VEILLE_REDACTED = "veille.redacted", "Watch note redacted"

    # Clarifications (memory.clarifications, memory.privacy).
    CLARIFICATIONS_PERSISTED = "clarifications.persisted", "Clarifications persisted"
    CLARIFICATION_ERASED = "clarification.erased", "Clarification erased"
    CLARIFICATION_REDACTED = "clarification.redacted", "Clarification redacted"

    # Per-subject memory (memory.subjects), facts by kind.
    SUBJECT_READ = "subject.read", "Subject read"
    SUBJECT_ACCESS_RESTRICTED = "subject.access_restricted", "Subject access restricted"
    SUBJECT_IMPORTED = "subject.imported", "Subject imported"
    SUBJECT_ERASED = "subject.erased", "Subject erased"
    SUBJECT_EMOTION_RECORDED = "subject.emotion_recorded", "Subject emotion recorded"
    SUBJECT_INTERACTIONS_RECORDED = "subject.interactions_recorded", "Subject interactions recorded"
    SUBJECT_PREFERENCE_ADDED = "subject.preference_added", "Subject preference added"
    SUBJECT_PREFERENCE_EDITED = "subject.preference_edited", "Subject preference edited"
    SUBJECT_PREFERENCE_DELETED = "subject.preference_deleted", "Subject preference deleted"
    SUBJECT_EVENT_ADDED = "subject.event_added", "Subject event added"
    SUBJECT_EVENT_EDITED = "subject.event_edited", "Subject event edited"
    SUBJECT_EVENT_DELETED = "subject.event_deleted", "Subject event deleted"
    SUBJECT_RELATIONSHIP_ADDED = "subject.relationship_added", "Subject relationship added"
    SUBJECT_RELATIONSHIP_EDITED = "subject.relationship_edited", "Subject relationship edited"
    SUBJECT_RELATIONSHIP_DELETED = "subject.relationship_deleted", "Subject relationship deleted"

    # Emotion transition probabilities (memory.admin).
    TRANSITION_PROBABILITY_ADDED = "transition_probability.added", "Transition probability added"
    TRANSITION_PROBABILITY_CHANGED = "transition_probability.changed", "Transition probability changed"
    TRANSITION_PROBABILITY_DELETED = "transition_probability.deleted", "Transition probability deleted"

    # Upstream MCP servers (gateway.services).
    GATEWAY_UPSTREAM_ADDED = "gateway.upstream_added", "Upstream server added"
    GATEWAY_UPSTREAM_CHANGED = "gateway.upstream_changed", "Upstream server changed"
    GATEWAY_UPSTREAM_REMOVED = "gateway.upstream_removed", "Upstream server removed"
    # Upstream tool definitions (gateway.pins): the rug-pull lock.
    GATEWAY_DEFINITION_WITHHELD = "gateway.definition_withheld", "Upstream tool definition withheld for review"
    GATEWAY_DEFINITION_PINNED = "gateway.definition_pinned", "Upstream tool definition pinned"
    GATEWAY_DEFINITION_REJECTED = "gateway.definition_rejected", "Upstream tool definition rejected"

    # OAuth clients of /mcp (gateway.oauth): an operator's consent, refusal and revocation.
    OAUTH_CONSENTED = "oauth.consented", "OAuth client authorized"
    OAUTH_DENIED = "oauth.denied", "OAuth client refused"
    OAUTH_REVOKED = "oauth.revoked", "OAuth grant revoked"
