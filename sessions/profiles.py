"""Provider profiles: the writes (create, change), each one transaction with its audit row.

Profiles decide where the server sends prompts and which secret goes with them, so only operators
with the profile permissions (or the system itself) write them, and every rule of the model's
``clean()`` (outbound guard, options, secret name) runs before a row is saved. Scripted profiles
fabricate a model: only the system actor (demo loader, tests) creates one or turns one into it.
Audit rows name the secret variable, never its value.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from governance.kernel.audit import AuditAction
from governance.kernel.exceptions import Forbidden, InvalidInput, NotFound
from governance.kernel.principals import Principal
from governance.kernel.services import record
from sessions.models import ProviderProfile
from sessions.providers.options import option_errors

CHANGEABLE = ("provider", "model", "base_url", "secret_name", "internal", "options", "enabled")
# Model fields as the API names them, for the ``loc`` of each error.
API_NAMES = {"base_url": "baseUrl", "secret_name": "secretName", "__all__": "body"}
SCRIPTED_REFUSED = "scripted profiles are created by the server only (demos and tests)"


def is_system(actor: Principal) -> bool:
    return actor.agent is None and actor.user is None


def _require(actor: Principal, perm: str) -> None:
    if actor.is_agent:
        raise Forbidden("Provider profiles are managed by operators, not agents.")
    if not is_system(actor) and not actor.has_perm(perm):
        raise Forbidden(f"This needs the {perm} permission.")


def _validated(profile: ProviderProfile, *, actor: Principal) -> None:
    """Every model rule, reported with API locations; scripted only for the system actor."""
    errors: list[dict[str, Any]] = []
    if profile.provider == ProviderProfile.Provider.SCRIPTED and not is_system(actor):
        errors.append({"loc": ["body", "provider"], "msg": SCRIPTED_REFUSED, "type": "value_error"})
    try:
        profile.full_clean()
    except ValidationError as exc:
        for field, messages in exc.message_dict.items():
            if field == "options":  # located at the option itself
                problems = option_errors(profile.provider, profile.options)
                errors.extend(
                    {"loc": _option_loc(key), "msg": message, "type": "value_error"} for key, message in problems
                )
                continue
            loc = ["body"] if field == "__all__" else ["body", API_NAMES.get(field, field)]
            errors.extend({"loc": loc, "msg": message, "type": "value_error"} for message in messages)
    if errors:
        raise InvalidInput("The provider profile is not valid.", errors=errors)


def _option_loc(key: str) -> list[str]:
    """Where a wrong option is: at its key, or at ``options`` itself when it is not an object."""
    return ["body", "options", key] if key else ["body", "options"]


def _audit_fields(profile: ProviderProfile) -> dict[str, Any]:
    return {
        "provider": profile.provider,
        "model": profile.model,
        "base_url": profile.base_url,
        "secret_name": profile.secret_name,
        "internal": profile.internal,
        "enabled": profile.enabled,
    }


# Not durable: the admin's change form and load_demo call it inside their own transaction.
@transaction.atomic
def create_profile(
    *,
    actor: Principal,
    name: str,
    provider: str,
    model: str = "",
    base_url: str = "",
    secret_name: str = "",
    internal: bool = False,
    options: dict[str, Any] | None = None,
    enabled: bool = True,
) -> ProviderProfile:
    """A new profile, checked (its base URL resolved and guarded) before it is saved."""
    _require(actor, "ai_sessions.add_providerprofile")
    profile = ProviderProfile(
        name=name,
        provider=provider,
        model=model,
        base_url=base_url.strip(),
        secret_name=secret_name.strip(),
        internal=internal,
        options=options if options is not None else {},
        enabled=enabled,
        created_by=actor.label,
    )
    _validated(profile, actor=actor)
    profile.save()
    record(
        actor=actor, action=AuditAction.PROVIDER_PROFILE_CREATED, target=profile, name=name, **_audit_fields(profile)
    )
    return profile


# Not durable: the admin's change form calls it inside Django's own transaction.
@transaction.atomic
def change_profile(profile_id: int, *, actor: Principal, **changes: Any) -> ProviderProfile:
    """Change some of ``CHANGEABLE``; the whole profile is checked again (a new URL or the
    internal flag switched off must pass the guard). The name stays: automations name it."""
    _require(actor, "ai_sessions.change_providerprofile")
    unknown = set(changes) - set(CHANGEABLE)
    if unknown:
        raise ValueError(f"not changeable: {', '.join(sorted(unknown))}")
    profile = ProviderProfile.objects.select_for_update().filter(pk=profile_id).first()
    if profile is None:
        raise NotFound(f"No provider profile {profile_id}.")
    if profile.provider == ProviderProfile.Provider.SCRIPTED and not is_system(actor):
        if set(changes) - {"enabled"}:
            msg = "a scripted profile was made by the server: operators may only switch it on or off"
            raise InvalidInput(msg, errors=[{"loc": ["body", "provider"], "msg": msg, "type": "value_error"}])
        profile.enabled = changes.get("enabled", profile.enabled)
    else:
        for field, value in changes.items():
            setattr(profile, field, value.strip() if isinstance(value, str) else value)
        _validated(profile, actor=actor)
    profile.save()
    record(
        actor=actor,
        action=AuditAction.PROVIDER_PROFILE_CHANGED,
        target=profile,
        changed=sorted(changes),
        **_audit_fields(profile),
    )
    return profile
