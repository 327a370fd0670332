"""The one place that decides whether a principal may touch an agent's objects.

A read outside what an agent may see is 404, as if the object did not exist (`visible`); a
write on another agent's object is 403, and the refusal is audited (`get_for`). Operators need
the model's view permission.
"""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import Model, QuerySet
from django.http import HttpRequest

from governance.kernel.exceptions import Forbidden, NotFound
from governance.kernel.principals import Principal
from governance.kernel.querysets import PrincipalQuerySet


def signed_in(request: HttpRequest) -> Principal:
    """The person behind a browser request (admin, pages). The admin site and ``login_required``
    turn anonymous visitors away first; one that slips through is refused, never made SYSTEM."""
    user = request.user
    if not isinstance(user, AbstractBaseUser):
        raise Forbidden("Sign in first.")
    return Principal(user=user)


def visible(principal: Principal, queryset: PrincipalQuerySet, value: object, *, what: str, field: str = "pk") -> Model:
    """The object a read names (``field`` = ``value``), through ``visible_to``, the one access
    filter. An operator without the queryset's view permission is refused (403: that is about the
    account, whatever the object). Anything else the caller may not see (another agent's job,
    session or agent, a learning outside an agent's memory reach) is 404, word for word the
    answer for an object that does not exist: a read must not tell an agent what lies outside its
    reach, nor that it exists. The attempt on an object that exists is audited all the same."""
    if principal.agent is None and principal.user is not None and not principal.has_perm(queryset.view_perm):
        raise Forbidden(f"Your account may not view {what}s.")
    found = queryset.visible_to(principal).filter(**{field: value}).first()
    if found is None:
        missing = NotFound(f"No {what} {value!r}." if isinstance(value, str) else f"No {what} {value}.")
        missing.hidden = queryset.filter(**{field: value}).exists()
        raise missing
    return found


def get_for(principal: Principal, queryset: QuerySet, pk: object, *, perm: str, what: str) -> Model:
    """An agent-owned object (job, session) to change, by primary key: 404 when it does not
    exist, 403 for another agent's object (a refused write is audited) or for an operator
    without ``perm``. Reads go through `visible`."""
    found = queryset.filter(pk=pk).first()
    if found is None:
        raise NotFound(f"No {what} {pk}.")
    if principal.agent is not None:
        if found.agent_id != principal.agent.pk:
            raise Forbidden(f"This {what} belongs to another agent.")
    elif not principal.has_perm(perm):
        raise Forbidden(f"Your account may not view {what}s.")
    return found


def require_owner_agent(principal: Principal, what: str) -> None:
    """Only the owning agent drives its object; operators read (and stop) but never drive."""
    if principal.agent is None:
        raise Forbidden(f"Only the agent that owns the {what} changes it.")


def agent_or_perm(principal: Principal, perm: str) -> None:
    """Agents use the fleet's shared services (memory, contracts); operators need ``perm``; the
    system (commands, tasks, the demo loader) acts on the operator's behalf already."""
    if principal.user is None and principal.agent is None:
        return
    if principal.agent is None and not principal.has_perm(perm):
        raise Forbidden(f"This needs an agent key or the {perm} permission.")
