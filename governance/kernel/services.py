"""Writes of the governance app: API keys and the audit trail.

Each function is one transaction, takes the acting principal as keyword-only ``actor``, and
writes its AuditEvent in the same transaction as the change.
"""

from __future__ import annotations

import functools
import json
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, PermissionsMixin
from django.db import connection, transaction
from django.utils import timezone

from governance.kernel import keys, rows
from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden
from governance.kernel.models import ApiKey, AuditEvent
from governance.kernel.principals import Principal

if TYPE_CHECKING:
    from agents.models import Agent


def record(*, actor: Principal, action: AuditAction, target: Any, **data: Any) -> AuditEvent:
    """Append one audit row; call inside the transaction that makes the change. An operator key
    minted for its user by someone else names its minter in the row too."""
    if actor.minted_by:
        data = {**data, "minted_by": actor.minted_by}
    return AuditEvent.objects.create(
        actor=actor.label, action=action, target_type=target._meta.label_lower, target_id=str(target.pk), data=data
    )


REFUSED = AuditAction.ACCESS_REFUSED  # the action of every refusal record_refusal writes


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


# Not durable: the demo credentials mint the demo keys and accounts in one transaction.
@transaction.atomic
def issue_api_key(
    *,
    actor: Principal,
    name: str,
    agent: Agent | None = None,
    user: AbstractBaseUser | None = None,
    minted_by: str = "",
) -> tuple[ApiKey, str]:
    """Create a key for exactly one agent or one user. Returns the row and the plain key,
    which is never stored and cannot be shown again.

    An operator key acts as its user, so a person mints one only for themselves: another user's
    key comes from a superuser or the system, and records its minter (``minted_by`` names the
    system's caller, e.g. the create_api_key command; otherwise the actor)."""
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
        minted_by=_minter(actor, user, minted_by) if user is not None else "",
    )
    record(actor=actor, action=AuditAction.API_KEY_ISSUED, target=api_key, kind=kind, owner=api_key.owner_label)
    return api_key, new.plain


def _minter(actor: Principal, user: AbstractBaseUser, named: str) -> str:
    """Who mints ``user``'s key when it is not ``user``: a superuser or the system, never another
    person (an Admin would otherwise decide as anyone, the superuser included). Empty for one's own."""
    if actor.user is not None and actor.user.pk == user.pk:
        return ""
    if actor.agent is not None or (actor.user is not None and not cast(PermissionsMixin, actor.user).is_superuser):
        raise Forbidden(
            "An operator key is minted only for yourself: another user's key comes from them or a superuser."
        )
    return named or actor.label


@transaction.atomic(durable=True)
def revoke_api_key(api_key: ApiKey, *, actor: Principal) -> ApiKey:
    """Revoke a key at once; revoking twice keeps the first revocation."""
    locked = ApiKey.objects.select_for_update().get(pk=api_key.pk)
    if locked.revoked_at is None:
        locked.revoked_at = timezone.now()
        locked.revoked_by = actor.label
        locked.save(update_fields=["revoked_at", "revoked_by"])
        record(actor=actor, action=AuditAction.API_KEY_REVOKED, target=locked)
    return locked


# Which owner each kind of key is bound to (the check constraint on ApiKey).
KEY_OWNERS: dict[str, str] = {ApiKey.Kind.AGENT: "agent", ApiKey.Kind.OPERATOR: "user"}


@functools.cache
def _active_key_sql(kind: str) -> str:
    """The active key of ``kind`` by prefix, joined with its owner, in one statement written once
    (governance/kernel/rows.py: every API request reads it)."""
    owner, column = rows.foreign_key(ApiKey, KEY_OWNERS[kind])
    quote = connection.ops.quote_name
    return (
        f"SELECT {rows.select_list(ApiKey, 'k')}, {rows.select_list(owner, 'o')}"
        f" FROM {quote(ApiKey._meta.db_table)} k"
        f" JOIN {quote(owner._meta.db_table)} o ON o.{quote(owner._meta.pk.column)} = k.{quote(column)}"
        " WHERE k.prefix = %s AND k.kind = %s AND k.revoked_at IS NULL"
    )


def authenticate_key(plain: str) -> ApiKey | None:
    """The active key matching ``plain``, with its owner loaded, or None. One indexed read, and no
    cache across requests: a revoked key or a deactivated user is refused by the next request.
    Touches ``last_used_at`` at most once per API_KEY_LAST_USED_RESOLUTION seconds so that reads
    stay reads."""
    parsed = keys.parse(plain)
    if parsed is None:
        return None
    row = rows.fetch_one(_active_key_sql(parsed.kind), [parsed.prefix, parsed.kind])
    api_key = rows.instance(ApiKey, row) if row is not None else None
    if row is None or api_key is None or not keys.matches(plain, api_key.key_hash):
        return None
    owner_field = KEY_OWNERS[parsed.kind]
    owner, _ = rows.foreign_key(ApiKey, owner_field)
    setattr(api_key, owner_field, rows.instance(owner, row, rows.width(ApiKey)))
    if api_key.user is not None and not api_key.user.is_active:
        return None
    now = timezone.now()
    resolution = timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION)
    if api_key.last_used_at is None or now - api_key.last_used_at >= resolution:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now
    return api_key
