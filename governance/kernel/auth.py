"""django-ninja authentication for the two kinds of API keys.

``request.auth`` is a :class:`Principal` after any of these succeed; endpoints read it through
`caller`, typed, never as ``request.auth``.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from ninja.security import HttpBearer

from governance.kernel.exceptions import Forbidden
from governance.kernel.models import ApiKey
from governance.kernel.principals import Principal
from governance.kernel.services import authenticate_key


class _KeyAuth(HttpBearer):
    kinds: tuple[str, ...] = (ApiKey.Kind.AGENT, ApiKey.Kind.OPERATOR)

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        api_key = authenticate_key(token)
        if api_key is None:
            return None
        if api_key.kind not in self.kinds:
            # A valid key of the wrong kind is known to us: forbidden, not unauthenticated.
            raise Forbidden(f"This endpoint does not accept {api_key.kind} keys.")
        return Principal(agent=api_key.agent, user=api_key.user, api_key=api_key)


class AgentKey(_KeyAuth):
    """Only agent keys: the endpoint acts as the agent."""

    kinds = (ApiKey.Kind.AGENT,)


class OperatorKey(_KeyAuth):
    """Only operator keys: the endpoint acts with the user's permissions."""

    kinds = (ApiKey.Kind.OPERATOR,)


class AnyKey(_KeyAuth):
    """Agent or operator keys; the endpoint checks what each may see."""


agent_key = AgentKey()
operator_key = OperatorKey()
any_key = AnyKey()


def caller(request: HttpRequest) -> Principal:
    """Who calls an API endpoint: the principal one of the key classes above put on
    ``request.auth`` (untyped there), typed once here. An endpoint without key authentication
    (``auth=None``) has no caller; asking for one is a bug in that endpoint, raised (a logged 500),
    never taken as an anonymous or system caller."""
    principal = getattr(request, "auth", None)
    if not isinstance(principal, Principal):
        raise ImproperlyConfigured(f"{request.method} {request.path} is not authenticated by an API key: no caller")
    return principal
