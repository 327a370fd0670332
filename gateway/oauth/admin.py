"""The admin's OAuth grants: every token a consent produced, whom it acts as, and an audited revoke.

django-oauth-toolkit's token admins already hide the tokens and replace deletion with a revoke
action; ours route that action through ``tokens.revoke`` so each revocation has its audit row
with the operator who made it.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from oauth2_provider import admin as oauth_admin
from oauth2_provider.models import AccessToken, RefreshToken

from gateway.oauth import subjects, tokens
from governance.kernel.access import signed_in


def _acts_as(scope: str) -> str:
    subject = subjects.subject_of(scope.split())
    if subject is None:
        return "nobody (not a consented grant)"
    return f"agent {subject.agent_id}" if subject.agent_id else "its user"


def _revoke(model_admin: admin.ModelAdmin, request: HttpRequest, queryset: QuerySet) -> None:
    actor = signed_in(request)
    count = 0
    for token in queryset:
        tokens.revoke(token, actor=actor)
        count += 1
    model_admin.message_user(
        request, f"Revoked {count} grant(s); each revocation is in the audit log.", messages.SUCCESS
    )


class AccessTokenAdmin(oauth_admin.AccessTokenAdmin):
    list_display = ("pk", "masked_token", "user", "application", "acts_as", "expires")
    list_select_related = ("application", "user")

    @admin.display(description="acts as")
    def acts_as(self, obj: AccessToken) -> str:
        return _acts_as(obj.scope)

    @admin.action(description="Revoke selected access tokens (and their refresh tokens)")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[AccessToken]) -> None:
        _revoke(self, request, queryset)


class RefreshTokenAdmin(oauth_admin.RefreshTokenAdmin):
    list_display = ("pk", "masked_token", "user", "application", "acts_as", "revoked")
    list_select_related = ("application", "user", "access_token")

    @admin.display(description="acts as")
    def acts_as(self, obj: RefreshToken) -> str:
        return _acts_as(obj.access_token.scope) if obj.access_token else "(revoked)"

    @admin.action(description="Revoke selected refresh tokens (and their access tokens)")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[RefreshToken]) -> None:
        _revoke(self, request, queryset)
