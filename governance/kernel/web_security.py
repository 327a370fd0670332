"""Browser-side defences that need a few lines of our own on top of django-axes and Django.

* ``client_ip``: the address login throttling counts failures against. Behind our reverse proxy
  every request comes from the proxy, so the proxy's ``X-Forwarded-For`` is used, but only when
  ``BEHIND_PROXY`` says a proxy we trust sits in front: otherwise anyone could send that header
  and pick a fresh address for every guess.
* ``LoginThrottleHandler``: axes' count per username and address, plus a count per address over
  every username: one password sprayed across many accounts fails once per pair, so only the
  address's total can stop it.
* ``LoginThrottleBackend``: axes' lockout check, minus its refusal of ``authenticate()`` calls
  without a request. Those come from code on this machine (Django's test client, a shell), never
  from the network, so there is no remote guesser to throttle.
* ``IdleSessionMiddleware``: a browser session lives ``SESSION_IDLE_TIMEOUT_MINUTES`` past the
  operator's last request. Background refreshes (the inbox polls every 10 s) do not count as
  activity, or an inbox left open on an unattended screen would never log out.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.backends import AxesStandaloneBackend
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Sum
from django.http import HttpRequest, HttpResponse


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: the proxy-appended (right-most) X-Forwarded-For entry behind a proxy.

    The right-most entry is the one our proxy wrote; entries to its left come from the client
    and can be forged, so they are never used.
    """
    if settings.BEHIND_PROXY:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        forwarded = [part for part in forwarded if part]
        if forwarded:
            return forwarded[-1]
    return request.META.get("REMOTE_ADDR")


class LoginThrottleHandler(AxesDatabaseHandler):
    """Locks an address out past LOGIN_ADDRESS_FAILURE_LIMIT failures within the cool-off, whatever
    usernames they named. A success resets only its own username's row, so a guesser's own
    account cannot wipe the address's count."""

    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        """The pair's failures, or the lockout count itself once the address is past its limit:
        axes decides both the refusal before a login and the lockout after a failure on this one
        number."""
        failures = super().get_failures(request, credentials)
        if self.address_failures(request) >= settings.LOGIN_ADDRESS_FAILURE_LIMIT:
            return max(failures, get_failure_limit(request, credentials))
        return failures

    def address_failures(self, request: HttpRequest) -> int:
        address: str | None = getattr(request, "axes_ip_address")  # noqa: B009 - set at runtime by axes' proxy handler
        recent = AccessAttempt.objects.filter(ip_address=address, attempt_time__gte=get_cool_off_threshold(request))
        return recent.aggregate(total=Sum("failures_since_start"))["total"] or 0


class LoginThrottleBackend(AxesStandaloneBackend):
    """Refuses logins for a locked-out username and address; leaves request-less calls alone."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


RENEWED_AT = "_idle_renewed_at"


class IdleSessionMiddleware:
    """Pushes a signed-in session's expiry ``SESSION_COOKIE_AGE`` forward as the operator works.

    A session is saved, and its server-side expiry renewed, only when its data changes; this
    writes the time of the renewal into it, on requests other than the background views named in
    ``SESSION_IDLE_IGNORED_VIEWS``. Not on every request (``SESSION_SAVE_EVERY_REQUEST`` would):
    at most once per ``SESSION_IDLE_RENEW_SECONDS`` (a tenth of the lifetime when that is less),
    so page views cost no write, and a session ends between ``lifetime - resolution`` and
    ``lifetime`` after the last request. Right after login the login itself counts as the
    renewal (``last_login``). An expired session is gone: the next page asks to log in again.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        session = getattr(request, "session", None)
        if session is None or session.is_empty() or self._background(request):
            return response
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return response
        now = time.time()
        renewed_at = session.get(RENEWED_AT) or (user.last_login.timestamp() if user.last_login else 0)
        if now - renewed_at >= self._resolution():
            session[RENEWED_AT] = int(now)
        return response

    @staticmethod
    def _background(request: HttpRequest) -> bool:
        match = getattr(request, "resolver_match", None)
        return match is not None and match.view_name in settings.SESSION_IDLE_IGNORED_VIEWS

    @staticmethod
    def _resolution() -> int:
        return min(settings.SESSION_IDLE_RENEW_SECONDS, settings.SESSION_COOKIE_AGE // 10)
