"""Browser-side defences that need a few lines of our own on top of django-axes and Django.

* ``client_ip``: the address login throttling counts failures against. Behind our reverse proxy
  every request comes from the proxy, so the proxy's ``X-Forwarded-For`` is used, but only when
  ``BEHIND_PROXY`` says a proxy we trust sits in front: otherwise anyone could send that header
  and pick a fresh address for every guess.
* ``LoginThrottleBackend``: axes' lockout check, minus its refusal of ``authenticate()`` calls
  without a request. Those come from code on this machine (Django's test client, a shell), never
  from the network, so there is no remote guesser to throttle.
* ``IdleSessionMiddleware``: a browser session lives ``SESSION_IDLE_TIMEOUT_MINUTES`` past the
  operator's last request. Background refreshes (the inbox polls every 10 s) do not count as
  activity, or an inbox left open on an unattended screen would never log out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
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


class LoginThrottleBackend(AxesStandaloneBackend):
    """Refuses logins for a locked-out username and address; leaves request-less calls alone."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None,
                     password: str | None = None, **kwargs: Any) -> None:  # fmt: skip
        if request is None:
            return None
        return super().authenticate(request, username, password, **kwargs)


class IdleSessionMiddleware:
    """Pushes a signed-in session's expiry ``SESSION_COOKIE_AGE`` forward on each real request.

    With ``SESSION_SAVE_EVERY_REQUEST`` off, a session is saved (and its server-side expiry
    renewed) only when it changes; marking it modified here renews it for every request except
    the background views named in ``SESSION_IDLE_IGNORED_VIEWS``. An expired session is simply
    gone, so the next page sends the browser to the login page.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        session = getattr(request, "session", None)
        match = getattr(request, "resolver_match", None)
        background = match is not None and match.view_name in settings.SESSION_IDLE_IGNORED_VIEWS
        if session is not None and not background and not session.is_empty():
            session.modified = True
        return response
