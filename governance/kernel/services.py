"""Writes of the governance app: API keys and the audit trail.

Each function is one transaction, takes the acting principal as keyword-only ``actor``, and
writes its AuditEvent in the same transaction as the change.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from governance.kernel import keys
from governance.kernel.models import ApiKey, AuditEvent
from governance.kernel.principals import Principal

if TYPE_CHECKING:
    from agents.models import Agent


def record(*, actor: Principal, action: str, target: Any, **data: Any) -> AuditEvent:
    """Append one audit row; call inside the transaction that makes the change."""
    return AuditEvent.objects.create(
        actor=actor.label,
        action=action,
        target_type=target._meta.label_lower,
        target_id=str(target.pk),
        data=data,
    )


REFUSED = "access.refused"


def record_refusal(*, actor: str, method: str, path: str, status: int, detail: str, **data: Any) -> AuditEvent:
    """Keep a refused attempt in the audit trail.

    The edge calls this after the refused service call has rolled back, so the trail holds the
    attempt (who, what, why) and nothing of what the attempt tried to write. ``actor`` is a
    principal's label, or names the key when the key itself was refused."""
    return AuditEvent.objects.create(
        actor=actor[:200],
        action=REFUSED,
        target_type="endpoint",
        target_id=f"{method} {path}"[:200],
        data=json.loads(json.dumps({"status": status, "detail": detail, **data}, default=str)),
    )


def refused_key(plain: str) -> ApiKey | None:
    """The revoked (or deactivated-owner) key ``plain`` really is, so a refused 401 can still name
    whose key was used; None for anything that is not one of our keys."""
    parsed = keys.parse(plain)
    if parsed is None:
        return None
    api_key = ApiKey.objects.select_related("agent", "user").filter(prefix=parsed.prefix, kind=parsed.kind).first()
    if api_key is None or not keys.matches(plain, api_key.key_hash):
        return None
    return api_key


@transaction.atomic
def issue_api_key(
    *, actor: Principal, name: str, agent: Agent | None = None, user: AbstractBaseUser | None = None
) -> tuple[ApiKey, str]:
    """Create a key for exactly one agent or one user. Returns the row and the plain key,
    which is never stored and cannot be shown again."""
    if (agent is None) == (user is None):
        raise ValueError("an API key is bound to exactly one agent or one user")
    kind = ApiKey.Kind.AGENT if agent is not None else ApiKey.Kind.OPERATOR
    new = keys.generate(kind)
    api_key = ApiKey.objects.create(
        name=name,
        kind=kind,
        agent=agent,
        user=user,
        prefix=new.prefix,
        key_hash=new.hashed,
        created_by=actor.label,
    )
    record(actor=actor, action="api_key.issued", target=api_key, kind=kind, owner=api_key.owner_label)
    return api_key, new.plain


@transaction.atomic
def revoke_api_key(api_key: ApiKey, *, actor: Principal) -> ApiKey:
    """Revoke a key at once; revoking twice keeps the first revocation."""
    locked = ApiKey.objects.select_for_update().get(pk=api_key.pk)
    if locked.revoked_at is None:
        locked.revoked_at = timezone.now()
        locked.revoked_by = actor.label
        locked.save(update_fields=["revoked_at", "revoked_by"])
        record(actor=actor, action="api_key.revoked", target=locked)
    return locked


def authenticate_key(plain: str) -> ApiKey | None:
    """The active key matching ``plain``, or None. Touches ``last_used_at`` at most once per
    API_KEY_LAST_USED_RESOLUTION seconds so that reads stay reads."""
    parsed = keys.parse(plain)
    if parsed is None:
        return None
    owner = "agent" if parsed.kind == ApiKey.Kind.AGENT else "user"  # the key says which join it needs
    api_key = (
        ApiKey.objects.select_related(owner)
        .filter(prefix=parsed.prefix, kind=parsed.kind, revoked_at__isnull=True)
        .first()
    )
    if api_key is None or not keys.matches(plain, api_key.key_hash):
        return None
    if api_key.user is not None and not api_key.user.is_active:
        return None
    now = timezone.now()
    resolution = timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION)
    if api_key.last_used_at is None or now - api_key.last_used_at >= resolution:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key
