"""Who may register an OAuth client, and how a client's metadata document is fetched.

Registration grants nothing: a client acts for no one until an operator consents. It is still
open to anyone on the network, so it is bounded (``OAUTH_REGISTRATIONS_PER_HOUR``), and a client
ID metadata document is fetched through the outbound guard every other URL the server fetches
passes (sessions/providers/outbound.py): public addresses only, the checked address connected to,
no redirects, a bounded body.
"""

from __future__ import annotations

import http.client
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.utils import timezone
from oauth2_provider.cimd import CIMDError, SafeMetadataFetcher, _validate_client_id_url
from oauth2_provider.models import get_application_model

from sessions.providers import outbound


class BoundedRegistration:
    """Dynamic Client Registration (RFC 7591) is anonymous, as MCP clients need it; at most
    ``OAUTH_REGISTRATIONS_PER_HOUR`` clients register in any hour, so a script cannot fill the
    table."""

    def has_permission(self, request: HttpRequest) -> bool:
        since = timezone.now() - timedelta(hours=1)
        recent = get_application_model().objects.filter(created__gte=since, registration_source="dcr").count()
        return recent < settings.OAUTH_REGISTRATIONS_PER_HOUR


class GuardedMetadataFetcher(SafeMetadataFetcher):
    """django-oauth-toolkit's CIMD fetcher with the plane's own outbound guard: the same rule for
    a client's metadata URL as for a webhook, a provider or an upstream MCP server."""

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        _validate_client_id_url(client_id)  # https, a path, no userinfo, fragment or dot segments
        try:
            target = outbound.check(client_id, internal=settings.OAUTH_CLIENT_METADATA_INTERNAL)
        except outbound.OutboundRefused as exc:
            raise CIMDError(f"client_id URL refused: {exc}") from exc
        except (OSError, UnicodeError) as exc:
            raise CIMDError("client_id host does not resolve") from exc
        connection = outbound.connection(target, settings.OAUTH_CLIENT_METADATA_TIMEOUT)
        try:
            connection.request("GET", target.path or "/", headers={"Accept": "application/json"})
            return self._read_document(connection.getresponse())
        except (TimeoutError, OSError, http.client.HTTPException) as exc:
            raise CIMDError(f"could not fetch client_id document ({type(exc).__name__})") from exc
        finally:
            connection.close()
