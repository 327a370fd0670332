"""``/mcp``: MCP's Streamable HTTP transport, stateless, served by Django itself.

The principal comes from the Bearer key, checked here before anything reads the message. A
``tools/call`` the SDK would accept as it is takes the express lane (gateway/express.py) in the
request's thread. Every other request gets its own SDK session manager (``stateless=True``, JSON
answers) on an event loop of its own: nothing about a client lives in one process's memory, so
any web process answers any request of a session. The SDK's own transport security checks the
Host and Origin headers (DNS rebinding) against ``MCP_ALLOWED_HOSTS``/``ORIGINS``.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import anyio
from asgiref.sync import async_to_sync
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from gateway import express, refusals
from gateway.oauth import metadata
from gateway.oauth import tokens as oauth_tokens
from gateway.server import PRINCIPAL, SERVER
from governance.kernel.auth import any_key
from governance.kernel.principals import Principal
from governance.kernel.problems import problem_response


def _token(request: HttpRequest) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _security() -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(settings.MCP_ALLOWED_HOSTS),
        allowed_origins=list(settings.MCP_ALLOWED_ORIGINS),
    )


def _scope(request: HttpRequest) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "root_path": "",
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()
        ],
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (request.META.get("SERVER_NAME", ""), int(request.META.get("SERVER_PORT") or 0)),
    }


async def _serve(
    scope: dict[str, Any], body: bytes, principal: Principal, security: TransportSecuritySettings
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Run the SDK's transport on one request, as ``principal``, and collect its answer."""
    manager = StreamableHTTPSessionManager(app=SERVER, stateless=True, json_response=True, security_settings=security)
    answered = anyio.Event()
    received = False
    status, headers, chunks = 500, [], []

    async def receive() -> dict[str, Any]:
        nonlocal received
        if not received:
            received = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], list(message.get("headers") or [])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                answered.set()

    token = PRINCIPAL.set(principal)
    try:
        async with manager.run():
            await manager.handle_request(scope, receive, send)
    finally:
        PRINCIPAL.reset(token)
    return status, headers, b"".join(chunks)


def _read(request: HttpRequest, *, oauth: bool) -> tuple[Principal | None, bytes]:
    """Who calls, and the body: one trip to Django's thread for both. An API key is one caller on
    both the REST API and here; at /mcp an OAuth access token bound to it is one too. A caller
    turned away is audited there when its key is one of ours (gateway/refusals.py)."""
    token = _token(request)
    principal = any_key.authenticate(request, token)
    if principal is None and oauth and token:
        principal = oauth_tokens.principal_for(token, oauth_tokens.resource_url(request))
    if principal is None:
        refusals.record_turned_away(token, method=request.method or "", path=request.path)
        return None, b""
    return principal, request.body if request.method != "GET" else b""


def _endpoint(request: HttpRequest, *, oauth: bool) -> HttpResponse:
    """A ``tools/call`` the SDK would accept as it is takes the express lane, in this thread
    (gateway/express.py); every other request goes through the SDK's transport."""
    principal, body = _read(request, oauth=oauth)
    if principal is None:
        if oauth:
            detail = "An agent or operator API key, or an OAuth access token for this endpoint, is required."
            challenge = metadata.challenge(request, error="invalid_token" if _token(request) else "")
        else:
            detail = "An agent or operator API key is required: Authorization: Bearer <key>."
            challenge = 'Bearer realm="mcp"'
        response = problem_response(401, detail=detail)
        response["WWW-Authenticate"] = challenge
        return response
    if request.method == "GET":
        # No server-initiated stream: a stateless server has nothing to push, and an open stream
        # would hold a web worker's thread for as long as the client keeps it (MCP allows 405).
        return HttpResponse(status=405, headers={"Allow": "POST, DELETE"})
    security = _security()
    call = express.recognise(request, body, security) if settings.MCP_EXPRESS_CALLS else None
    if call is not None:
        return express.answer(principal, call)
    status, headers, content = async_to_sync(_serve)(_scope(request), body, principal, security)
    response = HttpResponse(content, status=status)
    for name, value in headers:
        response[name.decode("latin-1")] = value.decode("latin-1")
    return response


@csrf_exempt
def endpoint(request: HttpRequest) -> HttpResponse:
    """/mcp: API keys and OAuth; a 401 points at the protected resource metadata (RFC 9728)."""
    return _endpoint(request, oauth=True)


@csrf_exempt
def key_endpoint(request: HttpRequest) -> HttpResponse:
    """/mcp/key: API keys only, and no OAuth discovery, for clients that would start OAuth on a
    401 with metadata and then drop the Authorization header they were configured with."""
    return _endpoint(request, oauth=False)
